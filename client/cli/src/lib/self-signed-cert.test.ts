/**
 * self-signed-cert.ts: the certificate `hostadm keys new` writes is one Node (OpenSSL) reads as a
 * self-signed client certificate for the key: names, validity, serial, extensions, signature.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createPublicKey, generateKeyPairSync, X509Certificate } from 'node:crypto';
import { selfSignedCertificate } from './self-signed-cert.ts';

const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });

test('a self-signed certificate for the key: its names, validity, serial, client-auth use, and a signature its own key verifies', () => {
  const notBefore = new Date('2026-11-25T08:00:00Z');
  const notAfter = new Date('2036-11-22T08:00:00Z');
  const pem = selfSignedCertificate(privateKey, publicKey, {
    commonName: 'hostadm work José@höst',
    organizationName: 'hostadm client key',
    notBefore,
    notAfter,
  });
  assert.match(pem, /^-----BEGIN CERTIFICATE-----\n([A-Za-z0-9+/=]{64}\n)+[A-Za-z0-9+/=]{1,64}\n-----END CERTIFICATE-----\n$/);
  const cert = new X509Certificate(pem);
  assert.equal(cert.subject, 'CN=hostadm work José@höst\nO=hostadm client key');
  assert.equal(cert.issuer, cert.subject);
  assert.equal(new Date(cert.validFrom).toISOString(), notBefore.toISOString());
  assert.equal(new Date(cert.validTo).toISOString(), notAfter.toISOString());
  assert.match(cert.serialNumber, /^01[0-9A-F]{30}$/, 'positive, 16 bytes');
  assert.equal(cert.ca, false);
  assert.deepEqual(cert.keyUsage, ['1.3.6.1.5.5.7.3.2'], 'TLS client authentication');
  assert.ok(cert.verify(publicKey), 'signed by its own key');
  assert.ok(!cert.verify(generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey), 'not by another');
  // The md5_key the agent lists is taken over the SPKI PEM: the certificate's key is the key.
  const md5 = (spkiPem: string | Buffer) => createHash('md5').update(spkiPem).digest('base64');
  assert.equal(md5(createPublicKey(pem).export({ type: 'spki', format: 'pem' })), md5(publicKey.export({ type: 'spki', format: 'pem' })));
});

test('two certificates never share a serial; a date from 2050 on is written as GeneralizedTime', () => {
  const fields = { commonName: 'a', organizationName: 'b', notBefore: new Date('2049-12-31T23:59:59Z'), notAfter: new Date('2050-01-01T00:00:00Z') };
  const one = new X509Certificate(selfSignedCertificate(privateKey, publicKey, fields));
  const two = new X509Certificate(selfSignedCertificate(privateKey, publicKey, fields));
  assert.notEqual(one.serialNumber, two.serialNumber);
  assert.equal(new Date(one.validFrom).toISOString(), '2049-12-31T23:59:59.000Z');
  assert.equal(new Date(one.validTo).toISOString(), '2050-01-01T00:00:00.000Z');
  assert.ok(one.raw.includes(Buffer.from('\x17\x0d491231235959Z', 'latin1')), 'UTCTime through 2049');
  assert.ok(one.raw.includes(Buffer.from('\x18\x0f20500101000000Z', 'latin1')), 'GeneralizedTime from 2050');
});
