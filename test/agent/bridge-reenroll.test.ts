/**
 * An agent whose host key the bridge already knows (its enrollment record lost, or the bridge now
 * reached at another address, as `hostadm up --port-bridge 0` does on every start) is told 409 when it
 * enrolls again: it signs in with that key instead of retrying the enrollment forever. A revoked key
 * still gets nowhere: the bridge refuses its sign-in.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { startTestAgent } from '../helpers/agent.ts';
import { startTestBridge, until } from '../bridge/helpers.ts';

test('an agent the bridge already knows signs in when its enrollment is refused as a duplicate', async (t) => {
  const bridge = await startTestBridge(t);
  const joinOptions = async () => ({ bridge: { url: bridge.url, joinToken: await bridge.token('agent', { nickname: 'again' }), nickname: 'again' } });
  const first = await startTestAgent(await joinOptions());
  await first.bridgeLink?.ready();
  const dataDir = first.dataDir;
  await first.close();
  rmSync(join(dataDir, 'bridge-enrollment.json'));

  const second = await startTestAgent(await joinOptions(), dataDir);
  t.after(() => second.dispose());
  await until(() => second.bridgeLink?.status === 'ready', 'the agent signed in with the key the bridge already had');
  // Recorded now, so the next start signs in without trying to enroll.
  assert.ok(existsSync(join(dataDir, 'bridge-enrollment.json')), 'the enrollment is recorded again');
});
