/**
 * The bridge's tables do not grow without bound (issue 12 item 6): the sweep prunes spent join tokens
 * once they have expired, blocks once lifted, and failures once out of the counting window, a batch at
 * a time, while keys (revoked ones included) stay, so a revoked key never enrolls again. The Node
 * bridge here (rows counted in its SQLite file); the D1 store and the hub's alarm are tested inside
 * workerd (bridge/src/runtime/workers/*.workers.test.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { count } from 'drizzle-orm';
import { authFailures, blacklist, bridgeKeys, usedJoinTokens } from '@hostadm/bridge/db/schema.ts';
import type { NewKey } from '@hostadm/bridge/relay/ports.ts';
import { ed25519Key } from '../helpers/keys.ts';
import { nodeOnly, startTestBridge, type TestBridge } from './helpers.ts';
import { md5Of, TestPeer } from './peers.ts';

const WINDOW_SECONDS = 60;
const BLOCK_SECONDS = 120;
const BATCH = 4;
const RULE = { failures: 2, windowMs: WINDOW_SECONDS * 1000, blockMs: BLOCK_SECONDS * 1000 };

function rows(bridge: TestBridge): { tokens: number; blocks: number; failures: number; keys: number } {
  const db = bridge.node!.store.db;
  const n = (table: typeof usedJoinTokens | typeof blacklist | typeof authFailures | typeof bridgeKeys) => db.select({ n: count() }).from(table).get()?.n ?? 0;
  return { tokens: n(usedJoinTokens), blocks: n(blacklist), failures: n(authFailures), keys: n(bridgeKeys) };
}

function storedKey(i: number): NewKey {
  return {
    id: `kfill${i}`,
    md5Key: `md5-fill-${i}`,
    spkiPem: '-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n',
    algorithm: 'ed25519',
    kind: 'client',
    nickname: '',
    createdBy: 'test',
    createdAt: 0,
  };
}

test('spent tokens, lifted blocks and old failures are pruned in batches; live ones and every key stay', {
  skip: nodeOnly("rows are counted in the Node bridge's SQLite file; D1: key-store.workers.test.ts and relay-hub.workers.test.ts"),
}, async (t) => {
  const bridge = await startTestBridge(t, {
    config: {
      pruneBatchRows: BATCH,
      pruneIntervalSeconds: 30,
      blacklist: { failures: RULE.failures, windowSeconds: WINDOW_SECONDS, blockSeconds: BLOCK_SECONDS },
    },
  });
  const store = bridge.node!.store;

  // A key enrolled through the relay with a token valid 60 s, then revoked.
  const revokedKey = ed25519Key();
  const peer = await TestPeer.connect(bridge.url, 'client');
  t.after(() => peer.close());
  const spent = await bridge.token('client', { ttlSeconds: 60 });
  assert.equal((await peer.enroll(spent, revokedKey)).name, 'response');
  assert.ok(await bridge.node!.relay.revoke(md5Of(revokedKey)));

  // Fill past a batch: 10 more spent tokens (valid 60 s), 10 blocked addresses, 6 single failures.
  const now = bridge.clock.now();
  for (let i = 0; i < 10; i++) assert.equal((await store.enroll({ jti: randomUUID(), expiresAt: now + 60_000 }, storedKey(i), now)).ok, true);
  for (let i = 0; i < 10; i++) for (let f = 0; f < RULE.failures; f++) await store.recordFailure(`198.51.100.${i}`, now, RULE);
  for (let i = 0; i < 6; i++) await store.recordFailure(`203.0.113.${i}`, now, RULE);
  assert.deepEqual(rows(bridge), { tokens: 11, blocks: 10, failures: 6, keys: 11 });

  // Nothing is pruned while it can still decide something: the spent token is still refused.
  await bridge.sweep();
  assert.deepEqual(rows(bridge), { tokens: 11, blocks: 10, failures: 6, keys: 11 });
  assert.deepEqual((await peer.enroll(spent, ed25519Key())).args, { code: 401, message: 'Unauthorized' });
  assert.equal(await store.isBlocked('198.51.100.0', bridge.clock.now()), true);

  // Tokens expired and failures out of the window: one batch per table per sweep, until none is left.
  await bridge.clock.advance(WINDOW_SECONDS + 1);
  await bridge.sweep();
  assert.deepEqual(rows(bridge), { tokens: 11 - BATCH, blocks: 10, failures: 6 - BATCH, keys: 11 });
  await bridge.sweep();
  assert.deepEqual(rows(bridge), { tokens: 11 - 2 * BATCH, blocks: 10, failures: 0, keys: 11 });
  await bridge.sweep();
  assert.deepEqual(rows(bridge), { tokens: 0, blocks: 10, failures: 0, keys: 11 });

  // Blocks once lifted, in the same batches (the sweep after a full batch runs without waiting).
  await bridge.clock.advance(BLOCK_SECONDS - WINDOW_SECONDS);
  for (let i = 0; i < 3; i++) await bridge.sweep();
  assert.deepEqual(rows(bridge), { tokens: 0, blocks: 0, failures: 0, keys: 11 });

  // Keys are never pruned: the revoked key still cannot enroll again, with a fresh token (on a new
  // connection: the sweeps closed the first one, which never signed in).
  const later = await TestPeer.connect(bridge.url, 'client');
  t.after(() => later.close());
  const again = await later.enroll(await bridge.token('client'), revokedKey);
  assert.equal(again.name, 'error');
  assert.match(JSON.stringify(again.args), /revoked/);
  assert.equal(rows(bridge).keys, 11);
});

test('the prune runs on the first sweep after a start, then once per interval', {
  skip: nodeOnly("rows are counted in the Node bridge's SQLite file; the hub keeps its mark in storage (relay-hub.workers.test.ts)"),
}, async (t) => {
  const config = { pruneIntervalSeconds: 600, blacklist: { failures: RULE.failures, windowSeconds: WINDOW_SECONDS, blockSeconds: BLOCK_SECONDS } };
  let bridge = await startTestBridge(t, { config });
  /** Three failures already out of the counting window at `now` (ms). */
  const fillOld = async (now: number) => {
    for (let i = 0; i < 3; i++) await bridge.node!.store.recordFailure(`192.0.2.${i}`, now - (WINDOW_SECONDS + 1) * 1000, RULE);
  };
  await fillOld(bridge.clock.now());
  // The first sweep prunes.
  await bridge.sweep();
  assert.equal(rows(bridge).failures, 0);

  // The next rows wait for the interval.
  await fillOld(bridge.clock.now());
  await bridge.clock.advance(300);
  await bridge.sweep();
  assert.equal(rows(bridge).failures, 3);
  await bridge.clock.advance(300);
  await bridge.sweep();
  assert.equal(rows(bridge).failures, 0);

  // Rows left by a bridge that stopped are pruned by the next one's first sweep (its clock starts
  // at the real time again, so they are written at that time's window).
  await fillOld(Date.now());
  await bridge.sweep();
  assert.equal(rows(bridge).failures, 3, 'within the interval, before the restart');
  bridge = await bridge.restart();
  await bridge.sweep();
  assert.equal(rows(bridge).failures, 0);
});
