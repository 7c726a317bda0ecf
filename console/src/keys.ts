/**
 * The browser's client key and the pinned host keys, in IndexedDB.
 *
 * The key is an RSA key made (or imported) with WebCrypto and kept as two non-extractable CryptoKeys
 * (RSASSA-PKCS1-v1_5 to sign, RSA-OAEP to open the channel handshake): script on this page can use
 * them but never read them. Its PKCS#8 text exists only while it is being made, so that it can be
 * saved once as a file for the CLI; after that only the public half can be exported.
 */
import { md5Key, spkiPemFromDer } from '@hostadm/shared/crypto/keys.ts';
import { bytesToBase64, privateKeyDer } from '@hostadm/client/sdk/src/key-auth.ts';

export interface StoredKey {
  id: 'default';
  publicPem: string;
  md5: string;
  cryptoKeys: { sign: CryptoKey; decrypt: CryptoKey };
  createdAt: string;
  /** The bridge that enrolled this key (its relay URL), once the join token was accepted. */
  enrolledAt?: string;
}

export interface HostPin {
  /** `<relay url> <host nickname>` */
  id: string;
  hostKey: string;
  fingerprint: string;
  pinnedAt: string;
}

const RSA = { hash: 'SHA-256' } as const;

function openDb(): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open('hostadm-console', 1);
    request.onupgradeneeded = () => {
      request.result.createObjectStore('keys', { keyPath: 'id' });
      request.result.createObjectStore('pins', { keyPath: 'id' });
    };
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

async function tx<T>(store: 'keys' | 'pins', mode: IDBTransactionMode, op: (s: IDBObjectStore) => IDBRequest): Promise<T> {
  const db = await openDb();
  try {
    return await new Promise<T>((resolve, reject) => {
      const request = op(db.transaction(store, mode).objectStore(store));
      request.onsuccess = () => resolve(request.result as T);
      request.onerror = () => reject(request.error);
    });
  } finally {
    db.close();
  }
}

export const loadKey = () => tx<StoredKey | undefined>('keys', 'readonly', (s) => s.get('default'));
export const saveKey = (key: StoredKey) => tx<unknown>('keys', 'readwrite', (s) => s.put(key));
export const forgetKey = () => tx<unknown>('keys', 'readwrite', (s) => s.delete('default'));
export const loadPin = (id: string) => tx<HostPin | undefined>('pins', 'readonly', (s) => s.get(id));
export const savePin = (pin: HostPin) => tx<unknown>('pins', 'readwrite', (s) => s.put(pin));
export const forgetPin = (id: string) => tx<unknown>('pins', 'readwrite', (s) => s.delete(id));
export const pinId = (relay: string, nickname: string) => `${relay} ${nickname}`;

function pem(label: string, der: ArrayBuffer | Uint8Array): string {
  const b64 = bytesToBase64(new Uint8Array(der));
  return `-----BEGIN ${label}-----\n${b64.replace(/.{1,64}/g, '$&\n')}-----END ${label}-----\n`;
}

async function storedFrom(pkcs8: Uint8Array, spki: ArrayBuffer): Promise<StoredKey> {
  const publicPem = spkiPemFromDer(new Uint8Array(spki));
  const buf = new Uint8Array(pkcs8);
  const [sign, decrypt] = await Promise.all([
    crypto.subtle.importKey('pkcs8', buf, { name: 'RSASSA-PKCS1-v1_5', ...RSA }, false, ['sign']),
    crypto.subtle.importKey('pkcs8', buf, { name: 'RSA-OAEP', ...RSA }, false, ['decrypt']),
  ]);
  return { id: 'default', publicPem, md5: await md5Key(publicPem), cryptoKeys: { sign, decrypt }, createdAt: new Date().toISOString() };
}

/** A new RSA-2048 key: stored non-extractable; the PKCS#8 PEM is handed back once, for the CLI file. */
export async function createKey(): Promise<{ key: StoredKey; privatePem: string }> {
  const pair = await crypto.subtle.generateKey({ name: 'RSASSA-PKCS1-v1_5', modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), ...RSA }, true, [
    'sign',
    'verify',
  ]);
  const pkcs8 = new Uint8Array(await crypto.subtle.exportKey('pkcs8', pair.privateKey));
  const key = await storedFrom(pkcs8, await crypto.subtle.exportKey('spki', pair.publicKey));
  await saveKey(key);
  return { key, privatePem: pem('PRIVATE KEY', pkcs8) };
}

/** An existing key file (PEM, PKCS#8 or PKCS#1 RSA, as `hostadm` writes them) made this browser's key. */
export async function importKeyFile(text: string): Promise<StoredKey> {
  const { der, algorithm } = privateKeyDer(text);
  if (algorithm !== 'rsa') throw new Error('the bridge channel needs an RSA key; this file holds an Ed25519 key');
  // The public half, through a JWK of the private key (n and e), while the imported copy is briefly extractable.
  const extractable = await crypto.subtle.importKey('pkcs8', new Uint8Array(der), { name: 'RSASSA-PKCS1-v1_5', ...RSA }, true, ['sign']);
  const jwk = await crypto.subtle.exportKey('jwk', extractable);
  const publicKey = await crypto.subtle.importKey(
    'jwk',
    { kty: 'RSA', n: jwk.n, e: jwk.e, alg: 'RS256', ext: true },
    { name: 'RSASSA-PKCS1-v1_5', ...RSA },
    true,
    ['verify'],
  );
  const key = await storedFrom(der, await crypto.subtle.exportKey('spki', publicKey));
  await saveKey(key);
  return key;
}

/** Offers `text` as a file download. */
export function download(name: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: 'application/x-pem-file' }));
  const a = Object.assign(document.createElement('a'), { href: url, download: name });
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
