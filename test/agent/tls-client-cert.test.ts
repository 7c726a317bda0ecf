/**
 * `register_ssl_cert`'s TLS path: over `wss://` and `https://` the agent asks for a client
 * certificate, and a key presented that way counts as loaded on the connection, so it registers
 * without `proof`. Without a client certificate, `proof` is still required.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import forge from 'node-forge';
import WebSocket from 'ws';
import { agentFor, SIM_PASSWORD, type Envelope } from '../helpers/agent.ts';

/** A self-signed certificate for `commonName` over a fresh RSA key (node generates it; forge signs). */
function selfSigned(commonName: string): { certPem: string; keyPem: string; publicKeyPem: string } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const keyPem = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
  const publicKeyPem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(publicKeyPem);
  cert.serialNumber = '01';
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + 86_400_000);
  const attrs = [{ name: 'commonName', value: commonName }];
  cert.setSubject(attrs);
  cert.setIssuer(attrs);
  if (commonName === '127.0.0.1') cert.setExtensions([{ name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] }]);
  cert.sign(forge.pki.privateKeyFromPem(keyPem), forge.md.sha256.create());
  return { certPem: forge.pki.certificateToPem(cert), keyPem, publicKeyPem };
}

const b64 = (text: string) => Buffer.from(text).toString('base64');

async function tlsAgent(t: TestContext) {
  const dir = mkdtempSync(join(tmpdir(), 'hostadm-tls-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const server = selfSigned('127.0.0.1');
  writeFileSync(join(dir, 'cert.pem'), server.certPem);
  writeFileSync(join(dir, 'key.pem'), server.keyPem);
  const agent = await agentFor(t, { tls: { certFile: join(dir, 'cert.pem'), keyFile: join(dir, 'key.pem') } });
  assert.match(agent.url, /^wss:\/\//);
  return { agent, ca: server.certPem };
}

/** A signed-in admin over wss, presenting `client` as its TLS certificate when given. */
async function wssAdmin(t: TestContext, url: string, ca: string, client?: { certPem: string; keyPem: string }) {
  const ws = new WebSocket(url, { ca, ...(client ? { cert: client.certPem, key: client.keyPem } : {}) });
  t.after(() => ws.terminate());
  const waiting = new Map<string, (env: Envelope) => void>();
  ws.on('message', (data) => {
    const env = JSON.parse(data.toString()) as Envelope;
    waiting.get(env.id)?.(env);
  });
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  let seq = 0;
  const request = (namespace: string, name: string, args: unknown) =>
    new Promise<Envelope>((resolve) => {
      const id = `tls-${++seq}`;
      waiting.set(id, resolve);
      ws.send(JSON.stringify({ id, namespace, name, args }));
    });
  assert.equal((await request('rpc', 'auth', { username: 'admin', password: SIM_PASSWORD })).name, 'response');
  return request;
}

test('wss: the key of the TLS client certificate registers without proof; without one, proof is required', async (t) => {
  const { agent, ca } = await tlsAgent(t);
  const client = selfSigned('laptop');

  const plain = await wssAdmin(t, agent.url, ca);
  const refused = await plain('admin', 'settings', { action: 'register_ssl_cert', pub_key: b64(client.certPem) });
  assert.equal(refused.name, 'error');
  assert.deepEqual((refused.args as { code: number; errors: Array<{ field: string }> }).code, 400);
  assert.equal((refused.args as { errors: Array<{ field: string }> }).errors[0]?.field, 'proof');

  const withCert = await wssAdmin(t, agent.url, ca, client);
  const registered = await withCert('admin', 'settings', { action: 'register_ssl_cert', pub_key: b64(client.certPem), nickname: 'laptop' });
  assert.deepEqual([registered.name, registered.args], ['response', {}]);
  const listed = (await withCert('admin', 'settings', { action: 'list_ssl_certs' })).args as Record<string, Record<string, { nickname: string }>>;
  assert.equal(listed.admin?.[b64(client.certPem)]?.nickname, 'laptop');

  // Another key than the one presented is not loaded: proof is required for it.
  const other = selfSigned('other');
  const notLoaded = await withCert('admin', 'settings', { action: 'register_ssl_cert', pub_key: b64(other.publicKeyPem) });
  assert.equal((notLoaded.args as { code: number }).code, 400);
});

test('https: PUT /admin/settings register_ssl_cert with a client certificate registers its key', async (t) => {
  const { agent, ca } = await tlsAgent(t);
  const client = selfSigned('script');
  const body = JSON.stringify({ action: 'register_ssl_cert', pub_key: b64(client.publicKeyPem) });
  const { status, text } = await new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = httpsRequest(
      `${agent.httpUrl}/admin/settings`,
      {
        method: 'PUT',
        ca,
        cert: client.certPem,
        key: client.keyPem,
        headers: { 'content-type': 'application/json', authorization: `Basic ${b64(`admin:${SIM_PASSWORD}`)}` },
      },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
  assert.equal(status, 200, text);
  assert.deepEqual(JSON.parse(text), { args: {} });
  assert.equal(agent.services.keys.list('admin').length, 1);
});
