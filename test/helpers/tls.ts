/**
 * A self-signed server certificate for 127.0.0.1 (subjectAltName IP), for tests of a bridge or agent
 * that terminates TLS itself; clients trust it by passing the PEM as their `ca`.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import forge from 'node-forge';

export interface LoopbackCertificate {
  certFile: string;
  keyFile: string;
  certPem: string;
}

/** The certificate and its key as PEM. */
export function loopbackCertificatePems(): { certPem: string; keyPem: string } {
  const keys = forge.pki.rsa.generateKeyPair(2048);
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = '01';
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + 86_400_000);
  const attrs = [{ name: 'commonName', value: '127.0.0.1' }];
  cert.setSubject(attrs);
  cert.setIssuer(attrs);
  cert.setExtensions([{ name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] }]);
  cert.sign(keys.privateKey, forge.md.sha256.create());
  return { certPem: forge.pki.certificateToPem(cert), keyPem: forge.pki.privateKeyToPem(keys.privateKey) };
}

/** Writes `cert.pem` and `key.pem` into `dir`. */
export function loopbackCertificate(dir: string): LoopbackCertificate {
  const { certPem, keyPem } = loopbackCertificatePems();
  const certFile = join(dir, 'cert.pem');
  const keyFile = join(dir, 'key.pem');
  writeFileSync(certFile, certPem);
  writeFileSync(keyFile, keyPem, { mode: 0o600 });
  return { certFile, keyFile, certPem };
}
