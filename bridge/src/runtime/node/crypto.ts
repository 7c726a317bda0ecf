/**
 * @module The KeyCrypto port on `node:crypto`, reusing the agent's key parsing and proof checks
 * (RSA ≥ 2048 or Ed25519; base64 PEM key or certificate; md5_key over the SPKI PEM).
 */
import { createPublicKey, type KeyObject } from 'node:crypto';
import { parsePublicKey, verifyProof } from '@hostadm/agent/server/keys.ts';
import type { KeyCrypto, KeyRecord, ParsedPublicKey } from '../../relay/ports.ts';

/** Parsed public keys by key id; bounded (cleared when full), since key objects are cheap to rebuild. */
const CACHE_LIMIT = 10_000;

export class NodeKeyCrypto implements KeyCrypto {
  private readonly cache = new Map<string, KeyObject>();

  parsePublicKey(pubKeyB64: string): ParsedPublicKey {
    const { spkiPem, algorithm, md5Key } = parsePublicKey(pubKeyB64);
    return { spkiPem, algorithm, md5Key };
  }

  verifyProof(key: KeyRecord, message: string, proofB64: string, form: 'original' | 'signature'): boolean {
    let object = this.cache.get(key.id);
    if (!object) {
      if (this.cache.size >= CACHE_LIMIT) this.cache.clear();
      object = createPublicKey(key.spkiPem);
      this.cache.set(key.id, object);
    }
    return verifyProof(object, message, proofB64, form);
  }
}
