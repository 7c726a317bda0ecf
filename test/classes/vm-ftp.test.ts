/**
 * `fetchiso` from `ftp://`: a small FTP server on 127.0.0.1:0 in this test (anonymous login, SIZE,
 * EPSV and RETR, which is what basic-ftp asks for a download) serves an image to the Linux platform's
 * downloader; the events carry the name, the percentage from SIZE and the rate, and a missing file
 * fails with the server's reply and leaves nothing in the ISO store.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRunner } from '@hostadm/agent/runner/runner.ts';
import { VmStore } from '@hostadm/agent/platforms/linux/vm/store.ts';
import { sessionClientFor, startTestAgent } from '../helpers/agent.ts';
import { fetchIso } from './vm-support.ts';

/** Serves `files` (path → bytes) to anonymous clients, one passive data connection per transfer. */
async function ftpServer(t: TestContext, files: Record<string, Buffer>): Promise<number> {
  const sockets = new Set<Socket>();
  const server = createServer((control) => {
    sockets.add(control);
    control.setEncoding('utf8');
    const reply = (line: string) => control.write(`${line}\r\n`);
    let pending: Promise<Socket> | null = null;
    let buffer = '';
    reply('220 test server');
    control.on('data', async (chunk: string) => {
      buffer += chunk;
      for (let nl = buffer.indexOf('\r\n'); nl >= 0; nl = buffer.indexOf('\r\n')) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 2);
        const [verb = '', ...rest] = line.split(' ');
        const arg = rest.join(' ');
        const file = files[arg];
        switch (verb.toUpperCase()) {
          case 'USER':
            reply('331 password please');
            break;
          case 'PASS':
            reply('230 logged in');
            break;
          case 'TYPE':
          case 'STRU':
          case 'OPTS':
            reply('200 ok');
            break;
          case 'SIZE':
            reply(file ? `213 ${file.length}` : '550 no such file');
            break;
          case 'EPSV': {
            const data = createServer();
            pending = new Promise((resolve) =>
              data.once('connection', (s) => {
                data.close();
                resolve(s);
              }),
            );
            await new Promise<void>((resolve) => data.listen(0, '127.0.0.1', resolve));
            reply(`229 Entering Extended Passive Mode (|||${(data.address() as AddressInfo).port}|)`);
            break;
          }
          case 'RETR': {
            if (!file || !pending) {
              reply('550 no such file');
              break;
            }
            reply('150 sending');
            const socket = await pending;
            pending = null;
            socket.end(file, () => reply('226 done'));
            break;
          }
          case 'QUIT':
            reply('221 bye');
            control.end();
            break;
          default:
            reply('502 not implemented');
        }
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    for (const s of sockets) s.destroy();
    server.close();
  });
  return (server.address() as AddressInfo).port;
}

test('fetchiso from ftp:// downloads with SIZE-based progress; a missing file fails and leaves nothing', {
  skip: process.platform !== 'linux' && 'Linux only',
}, async (t) => {
  const image = randomBytes(256 * 1024);
  const port = await ftpServer(t, { '/pub/ISO/mini.iso': image });
  const agent = await startTestAgent({ platform: 'linux', runner: createRunner({ prefix: ['false'] }) });
  t.after(() => agent.dispose());
  const root = await sessionClientFor(t, agent, 'root', 'full');
  await root.request('events', 'subscribe', ['dispatcher']);
  const store = new VmStore(agent.dataDir);

  const ok = await fetchIso(root, `ftp://127.0.0.1:${port}/pub/ISO/mini.iso`);
  const done = ok.events.at(-1);
  assert.equal(done?.success, 'true', JSON.stringify(done));
  assert.equal(done?.filename, 'mini.iso');
  assert.equal(done?.percent_done, '100%');
  assert.match(String(done?.download_rate), /^[0-9.]+ (B|kB|MB|GB)\/s$/);
  assert.deepEqual(readFileSync(join(store.isoDir, 'mini.iso')), image);

  const missing = await fetchIso(root, `ftp://127.0.0.1:${port}/pub/ISO/gone.iso`);
  assert.equal(missing.events.at(-1)?.success, 'false');
  assert.match(String(missing.events.at(-1)?.reason), /550/);
  assert.deepEqual(readdirSync(store.isoDir), ['mini.iso']);
});
