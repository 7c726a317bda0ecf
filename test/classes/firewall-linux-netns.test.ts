/**
 * The Linux firewall for real: the agent's runner is aimed into a sandbox (its own network namespace
 * and /etc copy, test/helpers/linux-sandbox.ts) joined by a veth pair to a second namespace the test
 * creates. Two TCP listeners run in the sandbox; connections from the other namespace are allowed and
 * refused as the agent starts, opens, closes and stops, and `status` follows the kernel. The host's
 * own network namespace, firewall and /etc are never touched; both namespaces are removed at the end.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { createRunner } from '@hostadm/agent/runner/runner.ts';
import { sessionClientFor, startTestAgent } from '../helpers/agent.ts';
import { canSandbox, createLinuxSandbox, type LinuxSandbox } from '../helpers/linux-sandbox.ts';
import { fw, SUCCESS } from './firewall-support.ts';

const NFT = '/usr/sbin/nft';

/** nft must exist (.ci/run installs Debian's nftables package when it is absent and it runs as root). */
function nftAvailable(): string | null {
  return existsSync(NFT) ? null : 'nft is not installed (apt-get install nftables; .ci/run does so as root)';
}

const sandboxable = canSandbox();
const skip = sandboxable.ok ? nftAvailable() || false : `the Linux sandbox ${sandboxable.reason}`;

function sh(argv: string[]): void {
  const result = spawnSync(argv[0] as string, argv.slice(1), { encoding: 'utf8', timeout: 30_000 });
  if (result.status !== 0) throw new Error(`${argv.join(' ')}: ${result.stderr}`);
}

/** A second namespace joined to the sandbox by a veth pair: the peer at .1, the sandbox at .2. */
function peerNamespace(t: TestContext, sandbox: LinuxSandbox): { name: string; sandboxIp: string } {
  const name = `hostadm-fw-${randomBytes(4).toString('hex')}`;
  const subnet = `10.${200 + ((randomBytes(1)[0] as number) % 50)}.${randomBytes(1)[0]}`;
  sh(['ip', 'netns', 'add', name]);
  t.after(() => spawnSync('ip', ['netns', 'del', name]));
  sh(['ip', '-n', name, 'link', 'add', 'fwpeer', 'type', 'veth', 'peer', 'name', 'fwhost', 'netns', String(sandbox.pid)]);
  sh(['ip', '-n', name, 'addr', 'add', `${subnet}.1/24`, 'dev', 'fwpeer']);
  sh(['ip', '-n', name, 'link', 'set', 'fwpeer', 'up']);
  sh([...sandbox.prefix, 'ip', 'addr', 'add', `${subnet}.2/24`, 'dev', 'fwhost']);
  sh([...sandbox.prefix, 'ip', 'link', 'set', 'fwhost', 'up']);
  return { name, sandboxIp: `${subnet}.2` };
}

/** TCP listeners inside the sandbox (node, so nothing else needs installing), stopped with the test. */
async function listeners(t: TestContext, sandbox: LinuxSandbox, ip: string, ports: number[]): Promise<void> {
  const script = `const net = require('node:net'); let n = 0; for (const p of ${JSON.stringify(ports)}) net.createServer((s) => { s.on('error', () => {}); s.end('hi'); }).listen(p, '${ip}', () => { if (++n === ${ports.length}) console.log('LISTENING'); });`;
  const child = spawn(sandbox.prefix[0] as string, [...sandbox.prefix.slice(1), process.execPath, '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.after(() => child.kill('SIGKILL'));
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on('data', (c: Buffer) => c.toString().includes('LISTENING') && resolve());
    child.once('exit', (code) => reject(new Error(`listeners exited with ${code}`)));
  });
}

/**
 * Whether a TCP connection from the peer namespace gets through (a dropped SYN times out). Two seconds:
 * the probe's own start (netns, bash) counts against it, and on a loaded machine one second was
 * once not enough for a port that was open.
 */
function connects(peer: string, ip: string, port: number): boolean {
  const probe = spawnSync('ip', ['netns', 'exec', peer, 'timeout', '2', 'bash', '-c', `exec 3<>/dev/tcp/${ip}/${port}`], { timeout: 10_000 });
  return probe.status === 0;
}

/** The veth pair carries traffic (both ports reachable) before any firewall check: up to ten tries. */
async function pathUp(reach: () => Record<number, boolean>): Promise<Record<number, boolean>> {
  let seen = reach();
  for (let i = 0; i < 10 && !Object.values(seen).every(Boolean); i++) {
    await new Promise((r) => setTimeout(r, 500));
    seen = reach();
  }
  return seen;
}

test('open/close/start/stop decide which connections get through a veth pair; status follows the kernel', { skip }, async (t) => {
  const sandbox = await createLinuxSandbox();
  t.after(() => sandbox.dispose());
  const { name: peer, sandboxIp } = peerNamespace(t, sandbox);
  await listeners(t, sandbox, sandboxIp, [8080, 8081]);
  const reach = () => ({ 8080: connects(peer, sandboxIp, 8080), 8081: connects(peer, sandboxIp, 8081) });
  const agent = await startTestAgent({ platform: 'linux', runner: createRunner({ prefix: sandbox.prefix }) });
  t.after(() => agent.dispose());
  const root = await sessionClientFor(t, agent, 'root', 'full');

  assert.deepEqual(await pathUp(reach), { 8080: true, 8081: true }, 'no firewall yet');
  assert.deepEqual(await fw(root, 'status'), { is_enabled: 'false', is_running: 'false' });
  assert.deepEqual(await fw(root, 'open', { ports: ['8080/tcp'] }), SUCCESS);
  assert.deepEqual(reach(), { 8080: true, 8081: true }, 'opening does not start it');

  assert.deepEqual(await fw(root, 'start'), SUCCESS);
  assert.deepEqual(await fw(root, 'status'), { is_enabled: 'false', is_running: 'true' });
  assert.deepEqual(reach(), { 8080: true, 8081: false });
  assert.deepEqual(await fw(root, 'list_open'), { openports: ['22/tcp', '8080/tcp'] });

  assert.deepEqual(await fw(root, 'open', { ports: ['8081/tcp'] }), SUCCESS);
  assert.deepEqual(reach(), { 8080: true, 8081: true });
  assert.deepEqual(await fw(root, 'close', { ports: ['8080/tcp'] }), SUCCESS);
  assert.deepEqual(reach(), { 8080: false, 8081: true });
  assert.deepEqual(await fw(root, 'list_open'), { openports: ['22/tcp', '8081/tcp'] });
  // The kernel's sets, read back without the agent.
  const listed = spawnSync(sandbox.prefix[0] as string, [...sandbox.prefix.slice(1), NFT, '-j', 'list', 'set', 'inet', 'hostadm', 'tcp_open'], {
    encoding: 'utf8',
  });
  assert.match(listed.stdout, /"elem": \[22, 8081\]/);
  // The ruleset went to the sandbox's /etc copy, never the host's.
  assert.match(readFileSync(join(sandbox.etc, 'hostadm', 'firewall.nft'), 'utf8'), /elements = \{ 22, 8081 \}/);
  assert.ok(!existsSync('/etc/hostadm/firewall.nft'));

  assert.deepEqual(await fw(root, 'restart'), SUCCESS);
  assert.deepEqual(reach(), { 8080: false, 8081: true });
  assert.deepEqual(await fw(root, 'stop'), SUCCESS);
  assert.deepEqual(await fw(root, 'status'), { is_enabled: 'false', is_running: 'false' });
  assert.deepEqual(reach(), { 8080: true, 8081: true });

  // status is the kernel's: a table loaded or deleted behind the agent's back shows at once.
  sh([...sandbox.prefix, NFT, '-f', '/etc/hostadm/firewall.nft']);
  assert.equal(((await fw(root, 'status')) as { is_running: string }).is_running, 'true');
  sh([...sandbox.prefix, NFT, 'delete', 'table', 'inet', 'hostadm']);
  assert.equal(((await fw(root, 'status')) as { is_running: string }).is_running, 'false');
});
