/**
 * Inside workerd, with the deployment's `nodejs_compat`: the shared crypto keeps WebCrypto (workerd's
 * native code; shared/src/crypto/engines/node/node-crypto.ts says why), and its answers are the published
 * vectors' (the bridge hashes host keys for fingerprints with it).
 */
import { primitives } from '@hostadm/shared/crypto/primitives.ts';
import { hostKeyFingerprint } from '@hostadm/shared/crypto/keys.ts';
import { randomBytes, toHex, utf8Encode } from '@hostadm/shared/crypto/subtle.ts';
import { describe, expect, it } from 'vitest';

describe('shared crypto on Workers', () => {
  it('runs on WebCrypto even though nodejs_compat offers node:crypto', async () => {
    expect(primitives().engine).toBe('webcrypto');
    expect(toHex(await primitives().sha256(utf8Encode('abc')))).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    // RFC 8032 §7.1 test 1's public key; its fingerprint is the hsc1 vectors' (docs/bridge-protocol.md §4).
    const hostKey = Uint8Array.from(
      Array.from({ length: 32 }, (_, i) => parseInt('d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a'.slice(i * 2, i * 2 + 2), 16)),
    );
    expect(await hostKeyFingerprint(hostKey)).toBe('SHA256:If4x36FUomFia_hUBG_SJxt77UtqvkWqWId-9H-XIbk');
    expect(randomBytes(32)).not.toEqual(randomBytes(32));
  });
});
