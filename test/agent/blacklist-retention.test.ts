/**
 * The agent's blacklist tables do not grow without bound (issue 12 item 6): failures out of the
 * counting window and blocks that have been lifted are removed at start (and hourly), not only when
 * their address comes back; a block still in force stays, across the restart.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { count } from 'drizzle-orm';
import { authFailures, blacklist } from '@hostadm/agent/store/schema.ts';
import { startTestAgent, type TestAgent } from '../helpers/agent.ts';

const WINDOW_SECONDS = 600;
const BLOCK_SECONDS = 3600;

function rows(agent: TestAgent): { blocks: number; failures: number } {
  const { db } = agent.services;
  return { blocks: db.select({ n: count() }).from(blacklist).get()?.n ?? 0, failures: db.select({ n: count() }).from(authFailures).get()?.n ?? 0 };
}

test('lifted blocks and failures out of the window are removed at start; blocks in force stay', async (t) => {
  let agent = await startTestAgent({ config: { blacklist: { failures: 2, windowSeconds: WINDOW_SECONDS, blockSeconds: BLOCK_SECONDS } } });
  t.after(() => agent.dispose());
  // Many addresses, as a distributed guesser would use: 10 blocked, 6 with one failure each.
  for (let i = 0; i < 10; i++) for (let f = 0; f < 2; f++) agent.services.blacklist.recordFailure(`198.51.100.${i}`);
  for (let i = 0; i < 6; i++) agent.services.blacklist.recordFailure(`203.0.113.${i}`);
  assert.deepEqual(rows(agent), { blocks: 10, failures: 6 });

  // The clock is the test's: a restart starts a new one at the real time, so the stored rows are
  // made old by rewriting their times (as if the agent had been stopped that long).
  const age = (seconds: number) => {
    const { db } = agent.services;
    db.update(authFailures)
      .set({ at: new Date(Date.now() - seconds * 1000) })
      .run();
    db.update(blacklist)
      .set({ until: new Date(Date.now() + BLOCK_SECONDS * 1000 - seconds * 1000) })
      .run();
  };

  age(WINDOW_SECONDS + 1);
  agent = await agent.restart();
  assert.deepEqual(rows(agent), { blocks: 10, failures: 0 });
  assert.equal(agent.services.blacklist.isBlocked('198.51.100.3'), true, 'a block in force is kept');

  age(BLOCK_SECONDS + 1);
  agent = await agent.restart();
  assert.deepEqual(rows(agent), { blocks: 0, failures: 0 });
});

test('a prune goes in batches until nothing old is left', async (t) => {
  const agent = await startTestAgent({ config: { blacklist: { failures: 100, windowSeconds: WINDOW_SECONDS } } });
  t.after(() => agent.dispose());
  for (let i = 0; i < 25; i++) agent.services.blacklist.recordFailure(`192.0.2.${i}`);
  agent.clock.advance(WINDOW_SECONDS + 1);
  assert.deepEqual(agent.services.blacklist.prune(4), { blocks: 0, failures: 25 });
  assert.deepEqual(rows(agent), { blocks: 0, failures: 0 });
});
