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
