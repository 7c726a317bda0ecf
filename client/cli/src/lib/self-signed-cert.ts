/**
 * @module The self-signed X.509 certificate `hostadm keys new` (and `hostadm up`'s first run) makes for
 * a client key: node:crypto signs, node-forge's ASN.1 module (the one the bridge already loads) encodes.
 * The whole of node-forge, whose certificate builder pulls in its RSA, ciphers, PRNG and PKCS modules,
 * cost a process that made a key ~3-6 MB for the rest of its life (`up` runs on).
 *
 * The certificate (RFC 5280): version 3, a positive random serial, sha256WithRSAEncryption, subject =
 * issuer = the given names as UTF8Strings, the given validity, and the extensions a TLS client key
 * needs: basicConstraints (not a CA), keyUsage digitalSignature (critical), extKeyUsage clientAuth, and
 * the subject key identifier (SHA-1 of the public key, RFC 5280 §4.2.1.2 method 1).
 */
import { createHash, randomBytes, sign, type KeyObject } from 'node:crypto';
import asn1, { type Asn1 } from 'node-forge/lib/asn1.js';

const OID = {
  sha256WithRsa: '1.2.840.113549.1.1.11',
  commonName: '2.5.4.3',
  organizationName: '2.5.4.10',
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  subjectKeyIdentifier: '2.5.29.14',
  clientAuth: '1.3.6.1.5.5.7.3.2',
} as const;

export interface CertificateFields {
  commonName: string;
  organizationName: string;
  notBefore: Date;
  notAfter: Date;
}

const U = asn1.Class.UNIVERSAL;
const T = asn1.Type;
/** Forge works on binary strings (one char per byte). */
const bin = (bytes: Uint8Array) => Buffer.from(bytes).toString('latin1');
const seq = (items: Asn1[]) => asn1.create(U, T.SEQUENCE, true, items);
const oid = (dotted: string) => asn1.create(U, T.OID, false, asn1.oidToDer(dotted).getBytes());
const der = (node: Asn1) => asn1.toDer(node).getBytes();

/** UTCTime through 2049, GeneralizedTime from 2050 (RFC 5280 §4.1.2.5). */
function time(date: Date): Asn1 {
  return date.getUTCFullYear() < 2050
    ? asn1.create(U, T.UTCTIME, false, asn1.dateToUtcTime(date))
    : asn1.create(U, T.GENERALIZEDTIME, false, asn1.dateToGeneralizedTime(date));
}

function extension(id: string, value: Asn1, critical = false): Asn1 {
  return seq([oid(id), ...(critical ? [asn1.create(U, T.BOOLEAN, false, '\xff')] : []), asn1.create(U, T.OCTETSTRING, false, der(value))]);
}

/** A self-signed certificate for the RSA key pair, as PEM. */
export function selfSignedCertificate(privateKey: KeyObject, publicKey: KeyObject, fields: CertificateFields): string {
  const name = seq(
    [
      [OID.commonName, fields.commonName],
      [OID.organizationName, fields.organizationName],
    ].map(([type, value]) => asn1.create(U, T.SET, true, [seq([oid(type!), asn1.create(U, T.UTF8, false, Buffer.from(value!, 'utf8').toString('latin1'))])])),
  );
  const algorithm = seq([oid(OID.sha256WithRsa), asn1.create(U, T.NULL, false, '')]);
  // A positive serial: a leading 0x01 byte keeps the top bit clear.
  const serial = Buffer.concat([Buffer.from([1]), randomBytes(15)]);
  const keyIdentifier = createHash('sha1')
    .update(publicKey.export({ type: 'pkcs1', format: 'der' }))
    .digest();
  const tbs = seq([
    asn1.create(asn1.Class.CONTEXT_SPECIFIC, 0, true, [asn1.create(U, T.INTEGER, false, '\x02')]),
    asn1.create(U, T.INTEGER, false, bin(serial)),
    algorithm,
    name,
    seq([time(fields.notBefore), time(fields.notAfter)]),
    name,
    asn1.fromDer(bin(publicKey.export({ type: 'spki', format: 'der' }))),
    asn1.create(asn1.Class.CONTEXT_SPECIFIC, 3, true, [
      seq([
        extension(OID.basicConstraints, seq([])),
        extension(OID.keyUsage, asn1.create(U, T.BITSTRING, false, '\x07\x80'), true),
        extension(OID.extKeyUsage, seq([oid(OID.clientAuth)])),
        extension(OID.subjectKeyIdentifier, asn1.create(U, T.OCTETSTRING, false, bin(keyIdentifier))),
      ]),
    ]),
  ]);
  const tbsDer = der(tbs);
  const signature = sign('sha256', Buffer.from(tbsDer, 'latin1'), privateKey);
  const certificate = Buffer.from(der(seq([tbs, algorithm, asn1.create(U, T.BITSTRING, false, `\x00${bin(signature)}`)])), 'latin1');
  const lines = certificate.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN CERTIFICATE-----\n${lines.join('\n')}\n-----END CERTIFICATE-----\n`;
}
