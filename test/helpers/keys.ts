/** Client-side key helpers for tests: what an original client and a modern one would send. */
import { constants, generateKeyPairSync, privateEncrypt, sign, type KeyObject } from 'node:crypto';
import { signedMessage, type SignaturePurpose } from '@hostadm/shared/crypto/signed-messages.ts';

export interface TestKey {
  privateKey: KeyObject;
  /** base64 of the PEM public key: the `pub_key` a client registers. */
  pubKeyB64: string;
  algorithm: 'rsa' | 'ed25519';
}

export function rsaKey(bits = 2048): TestKey {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: bits });
  const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
  return { privateKey, pubKeyB64: Buffer.from(pem).toString('base64'), algorithm: 'rsa' };
}

export function ed25519Key(): TestKey {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
  return { privateKey, pubKeyB64: Buffer.from(pem).toString('base64'), algorithm: 'ed25519' };
}

/** The original clients' stage 2: RSA PKCS#1 v1.5 private-key encryption of the message, base64. */
export function originalProof(key: TestKey, message: string): string {
  return privateEncrypt({ key: key.privateKey, padding: constants.RSA_PKCS1_PADDING }, Buffer.from(message)).toString('base64');
}

/** The modern stage 2: RSA-SHA256 or Ed25519 signature of label ‖ challenge for `purpose`, base64. */
export function signatureProof(key: TestKey, purpose: SignaturePurpose, challenge: string): string {
  return rawSignature(key, signedMessage(purpose, challenge));
}

/** A signature over exactly these bytes, no label: what an attacker replays, never what a client sends. */
export function rawSignature(key: TestKey, message: string | Uint8Array): string {
  return sign(key.algorithm === 'rsa' ? 'sha256' : null, Buffer.from(message), key.privateKey).toString('base64');
}

/** The key as the SDK takes it (`bridgeTransport`'s `key`): PKCS#8 private PEM and the public PEM. */
export function keyPems(key: TestKey): { privatePem: string; publicPem: string } {
  return {
    privatePem: key.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicPem: Buffer.from(key.pubKeyB64, 'base64').toString('utf8'),
  };
}
