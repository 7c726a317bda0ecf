/**
 * The key of a TLS client certificate, for `register_ssl_cert`'s "must match a certificate loaded in
 * the current connection". The agent asks for a client certificate but does not verify its chain
 * (anyone may present a self-signed one): what counts is that the TLS handshake proved the peer holds
 * the certificate's private key, which it does whatever the chain.
 */
import type { Socket } from 'node:net';
import { TLSSocket } from 'node:tls';

/** SPKI PEM of the certificate the peer presented on `socket`, or undefined (plain TCP, or none sent). */
export function tlsClientKeyOf(socket: Socket | undefined): string | undefined {
  if (!(socket instanceof TLSSocket)) return undefined;
  const cert = socket.getPeerX509Certificate();
  if (!cert) return undefined;
  try {
    return cert.publicKey.export({ type: 'spki', format: 'pem' }).toString();
  } catch {
    return undefined; // a key type node cannot export is no key we could register either
  }
}
