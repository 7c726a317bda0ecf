/**
 * The SDK's bridge example (client/sdk/examples/bridge.ts, quoted whole in client/sdk/README.md) run as
 * a user runs it, in its own process: first with a join token and a password (the key gets registered),
 * then with nothing but the key and the pinned host key it printed.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentFor, SIM_PASSWORD } from '../helpers/agent.ts';
import { rsaKey } from '../helpers/keys.ts';
import { startTestBridge } from '../bridge/helpers.ts';

const root = new URL('../..', import.meta.url).pathname;
const example = join(root, 'client/sdk/examples/bridge.ts');

function run(env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, [example], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (out += c));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, out })));
}

test('the README quotes the example file whole', () => {
  assert.ok(readFileSync(join(root, 'client/sdk/README.md'), 'utf8').includes(readFileSync(example, 'utf8')));
});

test('the bridge example, as documented: first contact by password registers the key, then the key alone', async (t) => {
  const bridge = await startTestBridge(t);
  const agent = await agentFor(t, { bridge: { url: bridge.url, joinToken: await bridge.token('agent', { nickname: 'web1' }), nickname: 'web1' } });
  await agent.bridgeLink?.ready();
  const dir = mkdtempSync(join(tmpdir(), 'hostadm-sdk-example-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const key = rsaKey();
  writeFileSync(join(dir, 'default.key'), key.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
  writeFileSync(join(dir, 'default.crt'), Buffer.from(key.pubKeyB64, 'base64').toString('utf8'));
  const base = { HOSTADM_BRIDGE: bridge.url, HOSTADM_HOST: 'web1', HOSTADM_KEY: join(dir, 'default.key') };

  const first = await run({
    ...base,
    HOSTADM_JOIN_TOKEN: await bridge.token('client'),
    HOSTADM_ACCEPT_HOST_KEY: agent.services.hostKey.fingerprint,
    HOSTADM_USER: 'admin',
    HOSTADM_PASSWORD: SIM_PASSWORD,
  });
  assert.equal(first.code, 0, first.out);
  assert.match(first.out, /key registered/);
  assert.match(first.out, /signed in by password; free memory \d+/);
  const pinned = /HOSTADM_HOST_KEY=(\S+)/.exec(first.out)?.[1];
  assert.equal(pinned, agent.services.hostKey.publicRaw);

  const second = await run({ ...base, HOSTADM_HOST_KEY: pinned! });
  assert.equal(second.code, 0, second.out);
  assert.match(second.out, /signed in by key; free memory \d+/, "the channel's key proof signed it in");
});
