/**
 * Bounded work for peers that have not signed in (issue 12 item 3, agent side), over real sockets:
 * parallel guesses count before they are checked, loopback floods are rate limited while others are
 * still served, error replies are capped, a peer that does not read is closed, and one address cannot
 * open sockets without limit. Each test failed before the change (see docs/security.md).
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { checkPassword, hashPassword } from '@hostadm/agent/platforms/sim/accounts.ts';
import { EVERYONE } from '@hostadm/agent/events/audience.ts';
import { agentFor, clientFor, TestClient, type Envelope } from '../helpers/agent.ts';

const codeOf = (reply: Envelope | null) => (reply ? (reply.args as { code?: number }).code : 'closed');

async function guess(t: TestContext, url: string, i: number): Promise<number | string | undefined> {
  let client: TestClient;
  try {
    client = await TestClient.connect(url);
  } catch (err) {
    // A guess whose socket opens after the address was blocked is refused at the upgrade, with the same 429.
    if (err instanceof Error && /upgrade refused: HTTP 429/.test(err.message)) return 429;
    throw err;
  }
  t.after(() => client.close());
  const reply = await Promise.race([client.request('rpc', 'auth', { username: 'admin', password: `wrong-${i}` }, `g${i}`), client.closed.then(() => null)]);
  return codeOf(reply);
}

test('40 parallel wrong passwords from one address: only the 5 the blacklist allows are checked, the rest are 429', async (t) => {
  const agent = await agentFor(t, { config: { blacklist: { exemptLoopback: false }, passwordChecks: { burst: 1000 } } });
  const codes = await Promise.all(Array.from({ length: 40 }, (_, i) => guess(t, agent.url, i)));
  const checked = codes.filter((c) => c === 401).length;
  assert.ok(checked <= 5, `${checked} guesses were checked (${JSON.stringify(codes)})`);
  assert.equal(codes.filter((c) => c === 429).length + checked, 40, JSON.stringify(codes));
});

test('a flood of wrong passwords from loopback is rate limited, and a good client is served meanwhile', async (t) => {
  const agent = await agentFor(t);
  const started = Date.now();
  const flood = Promise.all(Array.from({ length: 120 }, (_, i) => guess(t, agent.url, i)));
  const good = await clientFor(t, agent);
  const identify = await good.request('rpc', 'identify', {});
  assert.equal(identify.name, 'response');
  const codes = await flood;
  const seconds = (Date.now() - started) / 1000;
  const checked = codes.filter((c) => c === 401).length;
  // A burst of 20, then 5 a second: the rest are refused without a hash.
  assert.ok(checked <= 20 + Math.ceil(seconds * 5) + 1, `${checked} checks in ${seconds.toFixed(1)} s`);
  assert.ok(codes.filter((c) => c === 429).length > 0);
  assert.ok(
    codes.every((c) => c === 401 || c === 429),
    JSON.stringify(codes),
  );
});

test('an unknown or locked account costs one scrypt run, like a wrong password for a real one', async () => {
  let runs = 0;
  const counting = async (password: string, salt: Buffer, keylen: number) => {
    runs++;
    return Buffer.alloc(keylen, password.length + salt.length);
  };
  const stored = hashPassword('right');
  for (const [account, expected] of [
    [stored, 1],
    [undefined, 2],
    ['*', 3],
    ['garbage', 4],
  ] as const) {
    assert.equal(await checkPassword(account, 'wrong', counting), false);
    assert.equal(runs, expected);
  }
  assert.equal(await checkPassword(stored, 'right'), true);
  assert.equal(await checkPassword(undefined, ''), false);
});

test('a 1 MiB frame of bad fields gets a capped error list that says how many more there were', async (t) => {
  const agent = await agentFor(t);
  const client = await clientFor(t, agent);
  await client.login('admin');
  const args: Record<string, string> = { action: 'usershow' };
  for (let i = 0; i < 80_000; i++) args[`f${i}`] = 'x';
  assert.ok(JSON.stringify(args).length > 900 * 1024);
  const extra = Object.keys(args).length - 1;
  const reply = await client.request('admin', 'users', args);
  const body = reply.args as { code: number; message: string; errors: { field: string; message: string }[] };
  assert.equal(body.code, 400);
  assert.equal(body.errors.length, 101);
  assert.deepEqual(body.errors.at(-1), { field: '(more)', message: `${extra - 100} more problems not listed` });
  assert.ok(JSON.stringify(reply).length < 32 * 1024, `reply is ${JSON.stringify(reply).length} bytes`);
});

test('a subscriber that stops reading is closed once its send buffer passes the cap; others are served', async (t) => {
  const agent = await agentFor(t, { config: { maxSendBufferBytes: 1024 * 1024 } });
  const slow = await clientFor(t, agent);
  await slow.login('admin');
  await slow.request('events', 'subscribe', ['dispatcher']);
  const socket = (slow.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket;
  socket.pause();
  const big = 'x'.repeat(64 * 1024);
  // 64 MiB of events, far past the 1 MiB cap and the kernel's socket buffers.
  for (let i = 0; i < 1024; i++) agent.services.events.publish('dispatcher', { big, i }, EVERYONE);
  socket.resume();
  const closed = await slow.closed;
  assert.ok([1013, 1006].includes(closed.code), `closed with ${closed.code}`);
  assert.ok(slow.events.length < 1024, `the slow client received all ${slow.events.length} events`);
  const other = await clientFor(t, agent);
  assert.equal((await other.request('rpc', 'identify', {})).name, 'response');
});

test('one address may hold a bounded number of sockets; the next upgrade is refused with 429', async (t) => {
  const agent = await agentFor(t, { config: { maxConnectionsPerAddress: 5 } });
  const held = await Promise.all(Array.from({ length: 5 }, () => clientFor(t, agent)));
  await assert.rejects(TestClient.connect(agent.url), /upgrade refused: HTTP 429/);
  held[0]!.close();
  await held[0]!.closed;
  // The slot frees when the socket closes on the agent's side too.
  let again: TestClient | null = null;
  for (let i = 0; i < 50 && !again; i++) {
    again = await TestClient.connect(agent.url).catch(async () => {
      await new Promise((r) => setTimeout(r, 20));
      return null;
    });
  }
  assert.ok(again, 'a freed slot is usable again');
  t.after(() => again?.close());
});
