/**
 * Key formats and identities against node:crypto as the reference: md5_key must equal what the agent
 * computes (agent/src/server/keys.ts), fingerprints what §1 defines, and the base64 helpers Buffer's.
 */
import assert from 'node:assert/strict';
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  privateDecrypt,
  publicEncrypt,
  constants,
  sign,
  X509Certificate,
} from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { describe, test } from 'node:test';
import { describeOnEachEngine } from './engines.test-support.ts';
import { primitives } from './primitives.ts';
import forge from 'node-forge';
import {
  ed25519PublicRawFromPkcs8,
  hostKeyFingerprint,
  importEd25519PublicKey,
  importRsaOaepPrivateKey,
  importRsaOaepPublicKey,
  KeyFormatError,
  keyAlgorithmOf,
  md5Key,
  pemDecode,
  pkcs8DerFromPem,
  spkiDerFromPem,
  spkiPemFromCertificatePem,
  spkiPemFromDer,
} from './keys.ts';
import { constantTimeEqual, fromBase64, fromBase64Loose, fromBase64Url, randomBytes, toBase64, toBase64Url } from './subtle.ts';

const nodeMd5Key = (pem: string) =>
  createHash('md5')
    .update(createPublicKey(pem).export({ type: 'spki', format: 'pem' }).toString(), 'utf8')
    .digest('base64');

const rsa = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  publicKeyEncoding: { type: 'spki', format: 'pem' },
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
});
const ed = generateKeyPairSync('ed25519', { publicKeyEncoding: { type: 'spki', format: 'pem' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } });

/** Made once with `openssl req -x509 -newkey ed25519 -subj /CN=hsc1-test-ed25519`. */
const ED25519_CERT = `-----BEGIN CERTIFICATE-----
MIIBTzCCAQGgAwIBAgIUZ7RpbOa7zORV8NOwAAJ3GKbZIAQwBQYDK2VwMBwxGjAY
BgNVBAMMEWhzYzEtdGVzdC1lZDI1NTE5MCAXDTI2MTEyMjAyMDUyOVoYDzIxMjYx
MDI5MDIwNTI5WjAcMRowGAYDVQQDDBFoc2MxLXRlc3QtZWQyNTUxOTAqMAUGAytl
cAMhAEudMnPDueotUro3h3GETKjcfQvTTH3MeAt7YrYIc1ogo1MwUTAdBgNVHQ4E
FgQULJIKKUe7YIADrmJOPTSq+dWfp8MwHwYDVR0jBBgwFoAULJIKKUe7YIADrmJO
PTSq+dWfp8MwDwYDVR0TAQH/BAUwAwEB/zAFBgMrZXADQQDS/0YuoUvsy5uRjiP7
w39uds7Bg3OVH97asVNE1qW55x5focksXY8unjU6j+bN6LzF1R3OAZuiZW3/G1NG
hcUM
-----END CERTIFICATE-----
`;

function selfSignedRsaCertificate(publicPem: string, privatePem: string): string {
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(publicPem);
  cert.serialNumber = '01';
  cert.validity.notBefore = new Date('2026-01-01T00:00:00Z');
  cert.validity.notAfter = new Date('2036-01-01T00:00:00Z');
  const name = [{ name: 'commonName', value: 'hsc1 test client' }];
  cert.setSubject(name);
  cert.setIssuer(name);
  cert.sign(forge.pki.privateKeyFromPem(privatePem), forge.md.sha256.create());
  return forge.pki.certificateToPem(cert);
}

// node:crypto's MD5 in Node, node-forge's where WebCrypto is the engine (browsers, Workers): the same md5_key.
describeOnEachEngine('md5_key', () => {
  test('equals the agent computation for an RSA SPKI PEM', async () => {
    assert.equal(await md5Key(rsa.publicKey), nodeMd5Key(rsa.publicKey));
  });

  test('equals the agent computation for an Ed25519 key', async () => {
    assert.equal(await md5Key(ed.publicKey), nodeMd5Key(ed.publicKey));
  });

  test('canonicalises other forms first: PKCS#1, CRLF and odd line widths, a certificate', async () => {
    const pkcs1 = createPublicKey(rsa.publicKey).export({ type: 'pkcs1', format: 'pem' }).toString();
    assert.equal(await md5Key(pkcs1), nodeMd5Key(rsa.publicKey));
    const der = spkiDerFromPem(rsa.publicKey);
    const odd = `-----BEGIN PUBLIC KEY-----\r\n${toBase64(der).replace(/(.{76})/g, '$1\r\n')}\r\n-----END PUBLIC KEY-----`;
    assert.equal(await md5Key(odd), nodeMd5Key(rsa.publicKey));
    const cert = selfSignedRsaCertificate(rsa.publicKey, rsa.privateKey);
    assert.equal(await md5Key(cert), nodeMd5Key(rsa.publicKey));
  });

  test('a key that is not a PEM public key is refused with KeyFormatError', async () => {
    await assert.rejects(md5Key('no pem here'), KeyFormatError);
  });
});

describe('spkiPemFromDer', () => {
  test('spkiPemFromDer reproduces Node’s SPKI PEM byte for byte', () => {
    for (const pem of [rsa.publicKey, ed.publicKey]) assert.equal(spkiPemFromDer(spkiDerFromPem(pem)), pem);
  });
});

describe('certificates', () => {
  test('the SPKI of an RSA certificate equals X509Certificate.publicKey', () => {
    const cert = selfSignedRsaCertificate(rsa.publicKey, rsa.privateKey);
    assert.equal(spkiPemFromCertificatePem(cert), new X509Certificate(cert).publicKey.export({ type: 'spki', format: 'pem' }).toString());
  });

  test('the SPKI of an Ed25519 certificate equals X509Certificate.publicKey', () => {
    const expected = new X509Certificate(ED25519_CERT).publicKey.export({ type: 'spki', format: 'pem' }).toString();
    assert.equal(spkiPemFromCertificatePem(ED25519_CERT), expected);
    assert.equal(keyAlgorithmOf(spkiDerFromPem(ED25519_CERT)), 'ed25519');
  });

  test('garbage is refused with KeyFormatError', () => {
    assert.throws(() => spkiPemFromCertificatePem('-----BEGIN CERTIFICATE-----\nMAMCAQE=\n-----END CERTIFICATE-----\n'), KeyFormatError);
    assert.throws(() => spkiDerFromPem('no pem here'), KeyFormatError);
    assert.throws(() => pemDecode('-----BEGIN PUBLIC KEY-----\n@@@@\n-----END PUBLIC KEY-----\n', ['PUBLIC KEY']), KeyFormatError);
  });
});

describeOnEachEngine('host key fingerprint', () => {
  test('is SHA256: + base64url(SHA-256(raw public key)) and matches the JWK x of the private key', async () => {
    const raw = Buffer.from(createPublicKey(ed.publicKey).export({ format: 'jwk' }).x ?? '', 'base64url');
    const expected = `SHA256:${createHash('sha256').update(raw).digest('base64url')}`;
    assert.equal(await hostKeyFingerprint(new Uint8Array(raw)), expected);
    assert.equal(await hostKeyFingerprint(raw.toString('base64')), expected);
    assert.deepEqual(Buffer.from(await ed25519PublicRawFromPkcs8(ed.privateKey)), raw);
    await assert.rejects(hostKeyFingerprint(new Uint8Array(31)), KeyFormatError);
  });
});

describeOnEachEngine('Ed25519 public key imports', () => {
  test('one import per key, reused for the same bytes only: a host key pinned anew is verified with its own import', async () => {
    const signWith = (privateKey: string, data: Uint8Array) => new Uint8Array(sign(null, data, privateKey));
    const rawOf = (publicKey: string) => new Uint8Array(Buffer.from(createPublicKey(publicKey).export({ format: 'jwk' }).x ?? '', 'base64url'));
    const before = generateKeyPairSync('ed25519', { publicKeyEncoding: { type: 'spki', format: 'pem' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } });
    const after = generateKeyPairSync('ed25519', { publicKeyEncoding: { type: 'spki', format: 'pem' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } });
    const data = new TextEncoder().encode('hostadm-hsr1 host transcript');
    const oldKey = await importEd25519PublicKey(rawOf(before.publicKey));
    assert.equal(await importEd25519PublicKey(rawOf(before.publicKey)), oldKey, 'the same bytes: the same import');
    const newKey = await importEd25519PublicKey(rawOf(after.publicKey));
    assert.notEqual(newKey, oldKey);
    assert.equal(await primitives().ed25519Verify(newKey, signWith(after.privateKey, data), data), true);
    assert.equal(await primitives().ed25519Verify(newKey, signWith(before.privateKey, data), data), false, 'the old key signs nothing for the new pin');
    assert.equal(await primitives().ed25519Verify(oldKey, signWith(after.privateKey, data), data), false);
    await assert.rejects(importEd25519PublicKey(new Uint8Array(31)), KeyFormatError, 'a wrong size is refused, not cached');
  });
});

describeOnEachEngine('RSA imports', () => {
  test('OAEP-SHA256 interoperates with node:crypto, PKCS#8 and PKCS#1 private keys alike', async () => {
    const pub = await importRsaOaepPublicKey(rsa.publicKey);
    assert.equal(primitives().rsaModulusBits(pub), 2048);
    await assert.rejects(primitives().rsaVerify(pub, new Uint8Array(256), new Uint8Array(1)), 'an encryption key does not verify');
    const ct = await primitives().rsaOaepEncrypt(pub, new TextEncoder().encode('hello'));
    const plain = privateDecrypt({ key: rsa.privateKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' }, ct);
    assert.equal(plain.toString(), 'hello');
    const pkcs1 = createPrivateKey(rsa.privateKey).export({ type: 'pkcs1', format: 'pem' }).toString();
    assert.equal(keyAlgorithmOf(pkcs8DerFromPem(pkcs1)), 'rsa');
    const priv = await importRsaOaepPrivateKey(pkcs1);
    const nodeCt = publicEncrypt({ key: rsa.publicKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' }, Buffer.from('world'));
    assert.equal(Buffer.from(await primitives().rsaOaepDecrypt(priv, nodeCt)).toString(), 'world');
    await assert.rejects(primitives().rsaSign(priv, new Uint8Array(1)), 'a decryption key does not sign');
  });

  test('an Ed25519 key is refused where RSA is needed', async () => {
    await assert.rejects(importRsaOaepPublicKey(ed.publicKey), KeyFormatError);
    await assert.rejects(importRsaOaepPrivateKey(ed.privateKey), KeyFormatError);
  });

  test('a broken Ed25519 private key is refused with KeyFormatError', async () => {
    const der = pkcs8DerFromPem(ed.privateKey);
    await assert.rejects(ed25519PublicRawFromPkcs8(der.subarray(0, der.length - 1)), KeyFormatError);
  });
});

describe('byte helpers', () => {
  test('base64 matches Buffer at every length class, and strict decoding refuses junk', () => {
    for (const n of [0, 1, 2, 3, 4, 5, 200, 16384, 70000]) {
      const bytes = randomBytes(n);
      const b64 = toBase64(bytes);
      assert.equal(b64, Buffer.from(bytes).toString('base64'));
      assert.deepEqual(fromBase64(b64), bytes);
      assert.deepEqual(fromBase64Loose(b64), bytes);
      assert.equal(toBase64Url(bytes), Buffer.from(bytes).toString('base64url'));
      assert.deepEqual(fromBase64Url(toBase64Url(bytes)), bytes);
    }
    for (const bad of ['A', 'AB=', 'AB C', 'AB\nCD==', 'ab-_', '====', 'AAA=A===']) assert.throws(() => fromBase64(bad), /invalid base64/);
    assert.throws(() => fromBase64Loose('AB!D'), /invalid base64/);
    assert.throws(() => fromBase64Loose('ABC'), /multiple of 4/);
  });

  test('the btoa/atob fallback (runtimes without Buffer or Uint8Array.toBase64) agrees, sealed frames included', () => {
    // Run in a child without Buffer so that subtle.ts picks its browser/Worker path at load.
    const script = `delete globalThis.Buffer;
      const m = await import(${JSON.stringify(new URL('./subtle.ts', import.meta.url).href)});
      const out = [];
      for (const n of [0, 1, 2, 3, 200, 16384, 70000]) {
        const b = m.randomBytes(n); const s = m.toBase64(b); const back = m.fromBase64(s);
        out.push([Array.from(b), s, back.length === n && back.every((v, i) => v === b[i])]);
      }
      let refused = 0; for (const bad of ['AB!D', 'A', 'AB=']) { try { m.fromBase64(bad); } catch { refused++; } }
      const into = new Uint8Array(8); const n = m.fromBase64LooseInto('AAECAwQ=', into);
      const { SecureChannel } = await import(${JSON.stringify(new URL('./channel.ts', import.meta.url).href)});
      const s = { kC2a: m.randomBytes(32), kA2c: m.randomBytes(32), sid: m.randomBytes(16) };
      const c = await SecureChannel.create('client', { ...s }), a = await SecureChannel.create('agent', { ...s });
      const big = 'y'.repeat(20000); const channelOk = (await a.open(await c.seal(big))) === big && (await c.open(await a.seal('{}'))) === '{}';
      process.stdout.write(JSON.stringify({ out, refused, into: [n, ...into.subarray(0, n)], channelOk }));`;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    assert.equal(child.status, 0, child.stderr);
    const { out, refused, into, channelOk } = JSON.parse(child.stdout) as {
      out: [number[], string, boolean][];
      refused: number;
      into: number[];
      channelOk: boolean;
    };
    assert.deepEqual(into, [5, 0, 1, 2, 3, 4]);
    assert.equal(channelOk, true);
    for (const [bytes, b64, roundTrip] of out) {
      assert.equal(b64, Buffer.from(bytes).toString('base64'));
      assert.equal(roundTrip, true);
    }
    assert.equal(refused, 3);
  });

  test('constantTimeEqual', () => {
    assert.equal(constantTimeEqual(Uint8Array.of(1, 2, 3), Uint8Array.of(1, 2, 3)), true);
    assert.equal(constantTimeEqual(Uint8Array.of(1, 2, 3), Uint8Array.of(1, 2, 4)), false);
    assert.equal(constantTimeEqual(Uint8Array.of(1, 2), Uint8Array.of(1, 2, 3)), false);
    assert.equal(constantTimeEqual(new Uint8Array(0), new Uint8Array(0)), true);
  });
});
