/**
 * Linux guests marked boot=1 start with the agent, for real: QEMU in the test's sandbox (as in
 * vm-linux.test.ts). A first agent makes three guests (one marked boot=1, one not, one marked boot=1
 * whose disk is then taken away); the agent started again on the same data starts the first by
 * itself, in the background, with a `system-state` event, logs and reports the broken one and carries
 * on, leaves the unmarked one stopped; when it stops, it stops what it started (QMP quit) and leaves
 * no QEMU, socket or pid file behind.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { createRunner } from '@hostadm/agent/runner/runner.ts';
import { qmp } from '@hostadm/agent/platforms/linux/vm/qmp.ts';
import { VmStore } from '@hostadm/agent/platforms/linux/vm/store.ts';
import { sessionClientFor, startTestAgent, type Envelope } from '../helpers/agent.ts';
import { canSandbox, createLinuxSandbox } from '../helpers/linux-sandbox.ts';
import { vmOk } from './vm-support.ts';

const QEMU_ABSENT = ['/usr/bin/qemu-system-x86_64', '/usr/bin/qemu-img'].find((p) => !existsSync(p));
const sandboxable = canSandbox();
const skip =
  process.platform !== 'linux'
    ? 'Linux only'
    : QEMU_ABSENT
      ? `${QEMU_ABSENT} is not installed (apt-get install qemu-system-x86 qemu-utils; .ci/run does so as root)`
      : sandboxable.ok
        ? false
        : `the Linux sandbox ${sandboxable.reason}`;

test('guests marked boot=1 start when the agent starts and stop when it stops; boot=0 stays stopped; a broken one is reported', { skip }, async (t) => {
  const sandbox = await createLinuxSandbox({ hostname: 'boothost' });
  t.after(() => sandbox.dispose());
  assert.equal((await sandbox.runner.run(['ip', 'link', 'add', 'br0', 'type', 'bridge'])).code, 0);
  const logLines: string[] = [];
  const logger = pino(
    { level: 'info' },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        logLines.push(chunk.toString());
        done();
      },
    }),
  );
  const options = { platform: 'linux' as const, runner: createRunner({ prefix: sandbox.prefix }), logger };
  const first = await startTestAgent(options);
  const store = new VmStore(first.dataDir);
  t.after(() => rmSync(first.dataDir, { recursive: true, force: true }));
  let root = await sessionClientFor(t, first, 'root', 'full');
  await vmOk(root, 'setup', { nic: 'br0', pool: 'tank' });
  // `broken` comes first, so the agent must carry on past its failure to start `auto`.
  for (const [name, boot] of [
    ['broken', '1'],
    ['auto', '1'],
    ['manual', '0'],
  ] as const) {
    await vmOk(root, 'create', { name, size: '16M' });
    await vmOk(root, 'setprop', { name, boot, nic: 'none', ram: '64M' });
  }
  const marked = (await vmOk(root, 'listvms')).listvms as Record<string, { rcboot: string; running: string }>;
  assert.deepEqual(
    Object.entries(marked).map(([n, v]) => [n, v.rcboot, v.running]),
    [
      ['broken', 'YES', 'NO'],
      ['auto', 'YES', 'NO'],
      ['manual', 'NO', 'NO'],
    ],
    'marking a guest boot=1 does not start it',
  );
  rmSync(join(store.poolDir('tank'), 'broken', 'disk0.qcow2'));

  const agent = await first.restart();
  t.after(() => agent.dispose());
  root = await sessionClientFor(t, agent, 'root', 'full');
  // The agent answers at once, before any guest is up (the boot guests start in the background).
  assert.deepEqual(await vmOk(root, 'issetup'), { issetup: { setup: 'true' } });
  await root.request('events', 'subscribe', ['system-state']);
  const payload = (e: Envelope) => (e.args as { args: Record<string, unknown> }).args;
  // A new subscriber is sent the last event at once; `auto` is the last guest tried.
  const started = payload(await root.nextEvent((e) => payload(e).name === 'auto'));
  assert.deepEqual({ ...started, time: undefined }, { event_system: 'admin/vm', action: 'autostart', name: 'auto', state: 'started', time: undefined });

  const listed = (await vmOk(root, 'listvms')).listvms as Record<string, { rcboot: string; running: string; vmm: string }>;
  assert.deepEqual(
    Object.entries(listed).map(([n, v]) => [n, v.rcboot, v.running]),
    [
      ['broken', 'YES', 'NO'],
      ['auto', 'YES', 'YES'],
      ['manual', 'NO', 'NO'],
    ],
  );
  assert.deepEqual(await qmp(store.runPaths('auto').qmp, 'query-status'), { running: true, singlestep: false, status: 'running' });
  const failure = logLines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.name === 'broken' && l.state === 'failed');
  assert.ok(failure, `the failed start is logged: ${logLines.join('')}`);
  assert.match(String(failure.reason), /starting QEMU failed/);

  // Stopping the agent stops what it started (QMP quit), leaving the guest marked boot=1.
  await agent.close();
  const live = (await sandbox.runner.run(['ps', '-eo', 'stat=,args='])).stdout.split('\n').filter((l) => !l.trimStart().startsWith('Z'));
  assert.equal(live.filter((l) => l.includes('qemu-system')).length, 0, `no QEMU left: ${live.join('\n')}`);
  assert.deepEqual(readdirSync(store.runDir), [], 'no socket or pid file left');
  assert.ok(
    logLines.some((l) => l.includes('"action":"autostop"') && l.includes('"name":"auto"') && l.includes('"state":"stopped"')),
    'the stop is logged',
  );
  assert.equal(store.read().guests.auto?.props.boot, '1');
});
