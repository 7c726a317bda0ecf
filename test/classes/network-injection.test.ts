/**
 * `network list-devices` takes no arguments, so every argument is hostile: a 400 naming it, and no
 * command runs (a RecordingRunner with no replies records every attempt). The sim host is unchanged.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { RecordingRunner } from '@hostadm/agent/runner/recording-runner.ts';
import type { PlatformKind } from '@hostadm/agent/platforms/types.ts';
import { startTestAgent, TestClient } from '../helpers/agent.ts';

const HOSTILE: Array<Record<string, unknown>> = [
  { device: '; rm -rf /' },
  { name: '$(id)' },
  { iface: '`id`' },
  { filter: '| cat /etc/master.passwd' },
  { extra: '&& reboot' },
  { '-rf': true },
  { '--help': '' },
  { device: 'em0\nlo0' },
  { device: 'em0\0' },
  { device: 'x'.repeat(100_000) },
  { [`k${'y'.repeat(1000)}`]: 1 },
  { device: 'em0', all: 'true' },
];

for (const platform of ['linux', 'freebsd', 'sim'] satisfies PlatformKind[]) {
  test(`network list-devices refuses any argument before a command runs (${platform})`, async (t) => {
    const runner = new RecordingRunner();
    const agent = await startTestAgent({ platform, runner });
    t.after(() => agent.dispose());
    const session = agent.services.sessions.create({ user: 'root', level: 'full', groups: [], method: 'password', connectionId: 'fabricated' });
    const client = await TestClient.connect(agent.url);
    t.after(() => client.close());
    assert.equal((await client.request('rpc', 'auth_token', { token: session.token })).name, 'response');
    const stateFile = join(agent.dataDir, 'sim', 'state.json');
    const before = platform === 'sim' ? readFileSync(stateFile, 'utf8') : '';

    for (const args of HOSTILE) {
      const reply = await client.call('network', 'list-devices', args);
      const body = reply.args as { code: number; errors: Array<{ field: string }> };
      assert.equal(body.code, 400, JSON.stringify(Object.keys(args)).slice(0, 60));
      assert.deepEqual(body.errors.map((e) => e.field).sort(), Object.keys(args).sort());
    }
    assert.deepEqual(runner.calls, [], 'no command ran');
    if (platform === 'sim') assert.equal(readFileSync(stateFile, 'utf8'), before);
  });
}
