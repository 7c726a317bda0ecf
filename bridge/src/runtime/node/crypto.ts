/**
 * @module The KeyCrypto port on `node:crypto`, reusing the agent's key parsing and proof checks
 * (RSA ≥ 2048 or Ed25519; base64 PEM key or certificate; md5_key over the SPKI PEM). Key objects
 * are made per check and not cached: a key signs in once per connection, and a cache would cost
 * every idle agent a native key object.
 */
import { createPublicKey } from 'node:crypto';
import { parsePublicKey, verifyProof } from '@hostadm/agent/server/keys.ts';
import type { KeyCrypto, KeyRecord, ParsedPublicKey } from '../../relay/ports.ts';

export class NodeKeyCrypto implements KeyCrypto {
  parsePublicKey(pubKeyB64: string): ParsedPublicKey {
    const { spkiPem, algorithm, md5Key } = parsePublicKey(pubKeyB64);
    return { spkiPem, algorithm, md5Key };
  }

  verifyProof(key: KeyRecord, message: string, proofB64: string, form: 'original' | 'signature'): boolean {
    return verifyProof(createPublicKey(key.spkiPem), message, proofB64, form);
  }
}
