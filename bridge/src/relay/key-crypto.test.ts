/**
 * PortableKeyCrypto against the agent's node:crypto implementation it replaces: the same SPKI PEM,
 * md5_key and errors for the same inputs, and the same verdict on every proof.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { constants, createPrivateKey, createPublicKey, generateKeyPairSync, privateEncrypt } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
// Test-only reach into the agent: the bridge no longer depends on it, the comparison does.
import * as agent from '../../../agent/src/server/keys.ts';
import { ed25519Key, originalProof, rsaKey, signatureProof, type TestKey } from '../../../test/helpers/keys.ts';
import { HostadmError } from '@hostadm/shared/protocol/errors.ts';
import { PortableKeyCrypto } from './key-crypto.ts';
import type { KeyRecord } from './ports.ts';

const crypto = new PortableKeyCrypto();
const b64 = (text: string) => Buffer.from(text).toString('base64');
const pemOf = (key: TestKey) => Buffer.from(key.pubKeyB64, 'base64').toString();

function record(pubKeyB64: string): KeyRecord {
  const { spkiPem, algorithm, md5Key } = crypto.parsePublicKey(pubKeyB64);
  return { id: 'k1', md5Key, spkiPem, algorithm, kind: 'agent', nickname: '', createdBy: 'test', createdAt: 0, lastSeenAt: null, revokedAt: null };
}

/** Both implementations' verdicts must agree; returns ours. */
async function verdict(key: KeyRecord, message: string, proof: string, form: 'original' | 'signature'): Promise<boolean> {
  const ours = await crypto.verifyProof(key, 'bridge-signin', message, proof, form);
  const theirs = agent.verifyProof(createPublicKey(key.spkiPem), 'bridge-signin', message, proof, form);
  assert.equal(ours, theirs, `agent says ${theirs} for ${form} proof ${proof.slice(0, 16)}…`);
  return ours;
}

function assertSameParse(pubKeyB64: string, algorithm: 'rsa' | 'ed25519'): void {
  const theirs = agent.parsePublicKey(pubKeyB64);
  assert.deepEqual(crypto.parsePublicKey(pubKeyB64), { spkiPem: theirs.spkiPem, algorithm: theirs.algorithm, md5Key: theirs.md5Key });
  assert.equal(theirs.algorithm, algorithm);
}

function assertSameRejection(pubKeyB64: string, message: RegExp): void {
  let expected: unknown;
  assert.throws(
    () => agent.parsePublicKey(pubKeyB64),
    (e) => (expected = e) instanceof HostadmError,
  );
  assert.match((expected as Error).message, message);
  assert.throws(
    () => crypto.parsePublicKey(pubKeyB64),
    (e) => e instanceof HostadmError && e.code === 'BAD_REQUEST' && e.message === (expected as Error).message,
  );
}

/**
 * Self-signed certificates made by openssl, with the private keys that match them: X.509 v3 (what
 * `req -x509` makes) and v1 (`x509 -req` without extensions), whose tbsCertificate has no version.
 */
function certificates(): { rsaCert: TestKey; ed25519Cert: TestKey; ed25519CertV1: TestKey } {
  const dir = mkdtempSync(join(tmpdir(), 'hostadm-cert-'));
  try {
    const make = (name: string, genpkey: string[], v1 = false) => {
      const [keyFile, csrFile, certFile] = ['key', 'csr', 'crt'].map((ext) => join(dir, `${name}.${ext}`)) as [string, string, string];
      const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'ignore' });
      openssl('genpkey', ...genpkey, '-out', keyFile);
      if (v1) {
        openssl('req', '-new', '-key', keyFile, '-subj', `/CN=${name}`, '-out', csrFile);
        openssl('x509', '-req', '-in', csrFile, '-signkey', keyFile, '-days', '2', '-out', certFile);
      } else openssl('req', '-new', '-x509', '-key', keyFile, '-subj', `/CN=${name}`, '-days', '2', '-out', certFile);
      return { privateKey: createPrivateKey(readFileSync(keyFile)), pubKeyB64: readFileSync(certFile).toString('base64') };
    };
    return {
      rsaCert: { ...make('rsa', ['-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048']), algorithm: 'rsa' },
      ed25519Cert: { ...make('ed25519', ['-algorithm', 'ED25519']), algorithm: 'ed25519' },
      ed25519CertV1: { ...make('ed25519-v1', ['-algorithm', 'ED25519'], true), algorithm: 'ed25519' },
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const keys = { rsa2048: rsaKey(2048), rsa4096: rsaKey(4096), ed25519: ed25519Key(), ...certificates() };
const message = 'Kq3vX9aPz0LmN2bR7tYc5WdE8hJ1sF4g';

test('parsePublicKey: same SPKI PEM, md5_key and algorithm as the agent for keys and certificates', () => {
  for (const key of Object.values(keys)) assertSameParse(key.pubKeyB64, key.algorithm);
  for (const cert of [keys.rsaCert, keys.ed25519Cert, keys.ed25519CertV1]) {
    assert.match(pemOf(cert), /^-----BEGIN CERTIFICATE-----\n/);
    // A certificate registers its key: the same md5_key as the bare public key.
    const spki = createPublicKey(cert.privateKey).export({ type: 'spki', format: 'pem' }).toString();
    assert.equal(crypto.parsePublicKey(cert.pubKeyB64).md5Key, crypto.parsePublicKey(b64(spki)).md5Key);
  }
});

test('parsePublicKey: the PEM variants OpenSSL reads come out identical', () => {
  const spki = pemOf(keys.rsa2048);
  const pkcs1 = createPublicKey(spki).export({ type: 'pkcs1', format: 'pem' }).toString();
  const body = spki.split('\n').slice(1, -2).join('');
  const variants = [
    pkcs1,
    spki.replace(/\n/g, '\r\n'),
    `a comment line\n${spki}`,
    `-----BEGIN OTHER-----\nAAAA\n-----END OTHER-----\n${spki}`,
    spki.trimEnd(),
    `-----BEGIN PUBLIC KEY-----\n${body.match(/.{1,76}/g)!.join('\n')}\n-----END PUBLIC KEY-----\n`,
  ];
  for (const text of variants) assertSameParse(b64(text), 'rsa');
  // Base64 as Buffer reads it: whitespace and stray characters skipped, URL-safe alphabet accepted.
  assertSameParse(keys.ed25519.pubKeyB64.replace(/.{10}/g, '$&\n '), 'ed25519');
  assertSameParse(Buffer.from(pemOf(keys.ed25519)).toString('base64url'), 'ed25519');
});

test('parsePublicKey: small RSA, other key types and junk are 400s with the agent messages', () => {
  assertSameRejection(rsaKey(1024).pubKeyB64, /at least 2048 bits \(got 1024\)/);
  const spkiOf = (key: ReturnType<typeof generateKeyPairSync>['publicKey']) => b64(key.export({ type: 'spki', format: 'pem' }).toString());
  assertSameRejection(spkiOf(generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey), /unsupported key type ec/);
  assertSameRejection(spkiOf(generateKeyPairSync('ed448').publicKey), /unsupported key type ed448/);
  assertSameRejection(spkiOf(generateKeyPairSync('x25519').publicKey), /unsupported key type x25519/);
  assertSameRejection(spkiOf(generateKeyPairSync('rsa-pss', { modulusLength: 2048 }).publicKey), /unsupported key type rsa-pss/);
  const junk = [
    '',
    b64('not a key at all'),
    '$(rm -rf /); `id` | cat /etc/passwd && echo ${HOME} > /tmp/x',
    b64('-----BEGIN PUBLIC KEY-----\n$(reboot)\n-----END PUBLIC KEY-----\n'),
    b64('-----BEGIN PUBLIC KEY-----\n-----END PUBLIC KEY-----\n'),
    b64(pemOf(keys.rsa2048).replace(/A/g, 'B')),
    b64('-----BEGIN CERTIFICATE-----\nMAMCAQE=\n-----END CERTIFICATE-----\n'),
    keys.rsa2048.pubKeyB64.slice(0, 200),
  ];
  for (const input of junk) assertSameRejection(input, /not a base64 PEM public key or X\.509 certificate/);
});

test('parsePublicKey: a private key is refused by both, naming the mistake', () => {
  const pem = keys.rsa2048.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  assertSameRejection(b64(pem), /this is a private key/);
  assertSameRejection(b64(pemOf(keys.rsa2048).replace('END PUBLIC KEY', 'END PRIVATE KEY')), /this is a private key/);
});

test('verifyProof: right proofs in both forms are accepted, for keys and certificates', async () => {
  for (const key of Object.values(keys)) {
    const stored = record(key.pubKeyB64);
    assert.equal(await verdict(stored, message, signatureProof(key, 'bridge-signin', message), 'signature'), true);
    if (key.algorithm === 'rsa') assert.equal(await verdict(stored, message, originalProof(key, message), 'original'), true);
    // Ed25519 has no "original" form; a signature sent as encrypted_string is not one either.
    else assert.equal(await verdict(stored, message, signatureProof(key, 'bridge-signin', message), 'original'), false);
  }
});

test('verifyProof: wrong message, tampered proof, another key, malformed base64 are false', async () => {
  const other = { rsa: rsaKey(2048), ed25519: ed25519Key() };
  for (const key of Object.values(keys)) {
    const stored = record(key.pubKeyB64);
    const forms = key.algorithm === 'rsa' ? (['original', 'signature'] as const) : (['signature'] as const);
    for (const form of forms) {
      const prove = (k: TestKey, m: string) => (form === 'original' ? originalProof(k, m) : signatureProof(k, 'bridge-signin', m));
      const proof = prove(key, message);
      const tampered = Buffer.from(proof, 'base64');
      tampered[tampered.length >> 1]! ^= 0x01;
      assert.equal(await verdict(stored, `${message}x`, proof, form), false);
      assert.equal(await verdict(stored, `${message.slice(0, -1)}Z`, proof, form), false);
      assert.equal(await verdict(stored, message, tampered.toString('base64'), form), false);
      assert.equal(await verdict(stored, message, prove(other[key.algorithm], message), form), false);
      assert.equal(await verdict(stored, message, proof.slice(0, -8), form), false);
      for (const garbage of ['', '!!!!', '$(id)', 'AAAA', Buffer.alloc(1024, 0xff).toString('base64')]) {
        assert.equal(await verdict(stored, message, garbage, form), false);
      }
    }
  }
});

test('verifyProof: an original proof with its leading zero byte dropped passes, as with OpenSSL', async () => {
  const key = keys.rsa2048;
  const stored = record(key.pubKeyB64);
  // Type-1 padding is deterministic, so search messages for a proof that starts with 0x00.
  for (let i = 0; ; i++) {
    const text = `${message}-${i}`;
    const proof = Buffer.from(originalProof(key, text), 'base64');
    if (proof[0] !== 0) continue;
    assert.equal(await verdict(stored, text, proof.subarray(1).toString('base64'), 'original'), true);
    break;
  }
});

test('verifyProof: original proofs are unpadded as OpenSSL does (00 01, eight or more FF, 00, message)', async () => {
  const key = keys.rsa2048;
  const stored = record(key.pubKeyB64);
  const raw = (block: number[]) => privateEncrypt({ key: key.privateKey, padding: constants.RSA_NO_PADDING }, Buffer.from(block)).toString('base64');
  const block = (head: number[], pad: number[], text: string) => [...head, ...pad, 0, ...Buffer.from(text)];
  const fill = (n: number) => Array<number>(n).fill(0xff);
  const long = 'x'.repeat(256 - 11);
  assert.equal(await verdict(stored, long, raw(block([0, 1], fill(8), long)), 'original'), true);
  assert.equal(await verdict(stored, `${long}y`, raw(block([0, 1], fill(7), `${long}y`)), 'original'), false);
  assert.equal(await verdict(stored, message, raw(block([0, 2], fill(256 - 35), message)), 'original'), false);
  assert.equal(await verdict(stored, message, raw(block([0, 1], [...fill(100), 0xfe, ...fill(120)], message)), 'original'), false);
  assert.equal(await verdict(stored, '', raw([0, 1, ...fill(254)]), 'original'), false);
});

test('verifyProof: RSA-4096 original proofs stay cheap (one per connection at sign-in)', async () => {
  const stored = record(keys.rsa4096.pubKeyB64);
  const proof = originalProof(keys.rsa4096, message);
  const started = performance.now();
  for (let i = 0; i < 50; i++) assert.equal(await crypto.verifyProof(stored, 'bridge-signin', message, proof, 'original'), true);
  // About 1 ms each here; the bound only catches a pathological regression (say, a slow bignum).
  assert.ok(performance.now() - started < 1500, `${(performance.now() - started).toFixed(0)} ms for 50 verifications`);
});
