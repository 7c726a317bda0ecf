import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync, verify } from 'node:crypto';
import { signedMessage } from '@hostadm/shared/crypto/signed-messages.ts';
import { HostadmClientError } from './errors.ts';
import { signChallenge } from './key-auth.ts';

const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const ed = generateKeyPairSync('ed25519');
const pem = (k: typeof rsa) => k.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const testString = 'Kq3vX9aPz0LmN2bR7tYc5WdE8hJ1sF4g';

test('signChallenge signs label ‖ challenge with RSA and Ed25519 keys, and nothing else', async () => {
  for (const [key, algorithm] of [
    [rsa, 'sha256'],
    [ed, null],
  ] as const) {
    const signature = Buffer.from(await signChallenge(pem(key), 'bridge-signin', testString), 'base64');
    assert.equal(verify(algorithm, Buffer.from(signedMessage('bridge-signin', testString)), key.publicKey, signature), true);
    assert.equal(verify(algorithm, Buffer.from(testString), key.publicKey, signature), false);
    assert.equal(verify(algorithm, Buffer.from(signedMessage('agent-signin', testString)), key.publicKey, signature), false);
  }
});

test('signChallenge refuses a challenge a hostile peer shaped, with a clear error, before using the key', async () => {
  for (const challenge of ['', `hostadm-hsc1 client${'A'.repeat(13)}`, `${testString}\n`, testString.slice(2)]) {
    await assert.rejects(
      signChallenge(pem(rsa), 'bridge-signin', challenge),
      (e: unknown) => e instanceof HostadmClientError && /refusing to sign/.test((e as Error).message),
    );
  }
});

test('signChallenge signs with a non-extractable WebCrypto key as it does with the PEM of the same key', async () => {
  const pkcs8 = rsa.privateKey.export({ type: 'pkcs8', format: 'der' });
  const rsaHash = { hash: 'SHA-256' } as const;
  const cryptoKeys = {
    sign: await crypto.subtle.importKey('pkcs8', pkcs8, { name: 'RSASSA-PKCS1-v1_5', ...rsaHash }, false, ['sign']),
    decrypt: await crypto.subtle.importKey('pkcs8', pkcs8, { name: 'RSA-OAEP', ...rsaHash }, false, ['decrypt']),
  };
  assert.equal(cryptoKeys.sign.extractable, false);
  const signature = Buffer.from(await signChallenge(cryptoKeys, 'agent-signin', testString), 'base64');
  assert.equal(verify('sha256', Buffer.from(signedMessage('agent-signin', testString)), rsa.publicKey, signature), true);
  // PKCS#1 v1.5 signatures are deterministic: the same bytes as the PEM path.
  assert.equal(signature.toString('base64'), await signChallenge(pem(rsa), 'agent-signin', testString));
  await assert.rejects(signChallenge(cryptoKeys, 'bridge-signin', ''), HostadmClientError);
});
