/**
 * A resumed channel's first request leaves in RC's flight (docs/bridge-protocol.md §3 step 9), through
 * a real bridge to a real sim agent, with the SDK as a caller uses it: `open()` and a call made at once.
 * A relay in the middle counts the sealed frames each way (it cannot read them) and, playing the
 * attacker, drops, swaps or replays the client's. What is checked: RC and the request share a record
 * (hsc3) or leave back to back (hsc2) before anything sealed comes back; the reply arrives and a fresh
 * ticket is kept; with a ticket from an agent that does not order such requests (no `pipelining`), the
 * SDK waits for RC's reply as before; a refused RC or a meddling bridge never gets the request run.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { WebSocket, WebSocketServer, type RawData } from 'ws';
import { agentFor, auditedSignIns, type TestAgent, registerKey } from '../helpers/agent.ts';
import { rsaKey, type TestKey } from '../helpers/keys.ts';
import { pinnedTransport } from '../helpers/bridge-client.ts';
import { startTestBridge } from '../bridge/helpers.ts';
import { md5Of } from '../bridge/peers.ts';
import {
  ConnectionError,
  HostadmClient,
  memoryBridgeTicketStore,
  relayUrl,
  type BridgeTicketStore,
  type ClientTicket,
  type TicketStore,
} from '../../client/sdk/src/node.ts';

type Verdict = 'pass' | 'drop' | 'twice' | 'swap-with-next';

/** A relay between the SDK and the bridge: counts sealed relay frames per leg, and may meddle with the client's. */
interface Middle {
  url: string;
  /** Sealed frames in the order seen: `>` to the host, `<` to the client; plain relay bodies as `>R1`, `<RA` and the like. */
  log: string[];
  /** Decides the fate of each sealed frame to the host, numbered from 0 after `arm`. */
  arm(verdict: (index: number) => Verdict): void;
  /** Runs when RA passes on its way to the client. */
  onRa?: () => void;
}

/** How the middle treats the bridge sign-in's flight (docs/bridge-protocol.md §2.3). */
interface SignInMeddling {
  /** Poses as a bridge from before early relay: the greeting loses `early_relay`. */
  stripEarlyRelay?: boolean;
  /** Drops an R1 sent to `@host` and tells the client, as the bridge's notice would, that it was dropped. */
  dropEarlyR1?: boolean;
}

async function middle(t: TestContext, bridgeUrl: string, meddling: SignInMeddling = {}): Promise<Middle> {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => server.once('listening', resolve));
  t.after(
    () =>
      new Promise<void>((resolve) => {
        for (const ws of server.clients) ws.terminate();
        server.close(() => resolve());
      }),
  );
  let verdict: ((index: number) => Verdict) | null = null;
  let index = 0;
  const { port } = server.address() as { port: number };
  const m: Middle & { signInId?: string } = {
    url: `ws://127.0.0.1:${port}${new URL(bridgeUrl).pathname}`,
    log: [],
    arm(v) {
      verdict = v;
      index = 0;
    },
  };
  server.on('connection', (client, request) => {
    const upstream = new WebSocket(new URL(request.url ?? '/', bridgeUrl).toString());
    const queue: Array<{ data: Buffer; binary: boolean }> = [];
    let held: { data: Buffer; binary: boolean } | null = null;
    const up = (f: { data: Buffer; binary: boolean }) => (upstream.readyState === WebSocket.OPEN ? upstream.send(f.data, { binary: f.binary }) : queue.push(f));
    upstream.on('open', () => queue.splice(0).forEach((f) => upstream.send(f.data, { binary: f.binary })));
    upstream.on('message', (data: RawData, binary) => {
      let bytes = data as Buffer;
      const text = binary ? '' : bytes.toString('utf8');
      if (text.includes('"bridge_greeting"') && meddling.stripEarlyRelay) bytes = Buffer.from(text.replace(',"early_relay":true', ''));
      if (text.startsWith('{') && (JSON.parse(text) as { id: string }).id === m.signInId) m.log.push('<S2');
      const body = bytes.subarray(bytes.indexOf(0x0a) + 1).toString('utf8');
      if (binary || (bytes[0] !== 0x7b && body.startsWith('hsc1.'))) m.log.push('<');
      else if (bytes[0] !== 0x7b && body.includes('"hsr1"')) {
        m.log.push('<RA');
        m.onRa?.();
      }
      client.send(bytes, { binary });
    });
    upstream.on('close', () => client.close());
    client.on('close', () => upstream.close());
    client.on('message', (data: RawData, binary) => {
      const frame = { data: data as Buffer, binary };
      const body = frame.data.subarray(frame.data.indexOf(0x0a) + 1).toString('utf8');
      const sealed = binary || (frame.data[0] !== 0x7b && body.startsWith('hsc1.'));
      if (!sealed) {
        const text = frame.data.toString('utf8');
        if (text.startsWith('{') && text.includes('"auth_ssl"') && !text.includes('"action"')) {
          m.signInId = (JSON.parse(text) as { id: string }).id;
          m.log.push('>S2');
        }
        const early = text.startsWith('@host\n');
        if (frame.data[0] !== 0x7b && body.includes('"hsr1-r1"')) m.log.push(early ? '>R1@host' : '>R1');
        if (frame.data[0] !== 0x7b && body.includes('"hsc1-c1"')) m.log.push(early ? '>C1@host' : '>C1');
        if (early && meddling.dropEarlyR1) {
          const notice = {
            id: '',
            name: 'event',
            namespace: 'events',
            args: { name: 'bridge', args: { dropped: { destination: '@host', reason: 'unknown-destination' } } },
          };
          setTimeout(() => client.send(JSON.stringify(notice)), 50);
          return;
        }
        up(frame);
        return;
      }
      m.log.push('>');
      const fate = verdict?.(index++) ?? 'pass';
      if (fate === 'drop') return;
      if (fate === 'swap-with-next') {
        held = frame;
        return;
      }
      up(frame);
      if (fate === 'twice') up(frame);
      if (held) {
        up(held);
        held = null;
      }
    });
  });
  return m;
}

function store(): TicketStore & { kept: ClientTicket | undefined } {
  const s = { kept: undefined as ClientTicket | undefined, load: () => s.kept, save: (ticket: ClientTicket | undefined) => void (s.kept = ticket) };
  return s;
}

/** A client made as a caller would: `open()` started, the call made at once, both awaited. */
function client(
  t: TestContext,
  bridgeUrl: string,
  agent: TestAgent,
  key: TestKey,
  tickets: TicketStore,
  extra: { joinToken?: string; signInTickets?: BridgeTicketStore } = {},
) {
  const c = new HostadmClient({
    transport: pinnedTransport(bridgeUrl, agent, key, tickets, extra),
    reconnect: false,
    connectTimeoutMs: 3000,
  });
  t.after(() => c.close());
  return c;
}

async function setup(t: TestContext, version: 'hsc3' | 'hsc2' = 'hsc3', meddling: SignInMeddling = {}) {
  const bridge = await startTestBridge(t);
  const older = version === 'hsc2' ? { channelVersions: ['hsc2'] as const } : {};
  const agent = await agentFor(t, {
    bridge: { url: bridge.url, joinToken: await bridge.token('agent', { nickname: 'simhost' }), nickname: 'simhost', ...older },
  });
  await agent.bridgeLink?.ready();
  const key = rsaKey();
  await registerKey(t, agent, key);
  const tickets = store();
  const first = client(t, bridge.url, agent, key, tickets, { joinToken: await bridge.token('client') });
  await first.open();
  await first.close();
  assert.ok(tickets.kept?.pipelining, 'the full handshake left a ticket that allows pipelining');
  return { bridge, agent, key, tickets, relay: await middle(t, bridge.url, meddling) };
}

const groupadds = (agent: TestAgent) => agent.services.audit.recent(1000).filter((r) => r.action === 'groupadd');
/** Sealed frames to the host after R1 and before the first sealed frame back. */
const flight = (log: string[]) => {
  const afterR1 = log.slice(log.findLastIndex((e) => e.startsWith('>R1')) + 1);
  const back = afterR1.indexOf('<');
  return afterR1.slice(0, back < 0 ? undefined : back).filter((e) => e === '>').length;
};

for (const version of ['hsc3', 'hsc2'] as const) {
  test(`${version}: the first call leaves with RC, before anything sealed comes back; its reply arrives and a fresh ticket is kept`, async (t) => {
    const { agent, key, tickets, relay } = await setup(t, version);
    const used = tickets.kept!.ticket;
    const c = client(t, relay.url, agent, key, tickets);
    const opening = c.open();
    const call = c.admin.users.groupadd({ name: `piped_${version}` });
    await opening;
    assert.deepEqual(await call, { result: 'success' });
    assert.equal(
      flight(relay.log),
      version === 'hsc3' ? 1 : 2,
      `${version === 'hsc3' ? 'one record' : 'RC’s frame and the call’s'} before any reply: ${relay.log.join(' ')}`,
    );
    if (version === 'hsc3') assert.equal(relay.log.filter((e) => e === '>').length, 1, 'the call needed no record of its own');
    // R1 left right behind the bridge sign-in, to the room's host, before the sign-in was answered.
    const at = (e: string) => relay.log.indexOf(e);
    assert.ok(at('>S2') >= 0 && at('>S2') < at('>R1@host') && at('>R1@host') < at('<S2'), relay.log.join(' '));
    assert.equal(at('>R1'), -1, 'R1 went once');
    assert.deepEqual(auditedSignIns(agent).slice(-1), ['auth_ssl 200 resumed']);
    assert.deepEqual(
      groupadds(agent).map((r) => `${r.user} ${r.code}`),
      ['admin 200'],
    );
    assert.ok(tickets.kept && tickets.kept.ticket !== used && tickets.kept.pipelining, 'a fresh ticket for the next one');
  });
}

test('a ticket from an agent that does not say `pipelining` (an older one): RC leaves alone, the call after its reply, as before', async (t) => {
  const { agent, key, tickets, relay } = await setup(t);
  const { pipelining: _dropped, ...older } = tickets.kept!;
  tickets.kept = older;
  const c = client(t, relay.url, agent, key, tickets);
  const opening = c.open();
  const call = c.admin.users.groupadd({ name: 'not_piped' });
  await opening;
  assert.deepEqual(await call, { result: 'success' });
  assert.equal(flight(relay.log), 1, relay.log.join(' '));
  assert.equal(relay.log.filter((e) => e === '>').length, 2, 'RC, then the call in a record of its own');
});

test('RC refused (it came after the host’s 30 s window): the call in its flight is not run, and both fail with the refusal', async (t) => {
  const { agent, key, tickets, relay } = await setup(t);
  relay.onRa = () => agent.clock.advance(31);
  const c = client(t, relay.url, agent, key, tickets);
  const opening = c.open();
  const call = c.admin.users.groupadd({ name: 'refused_flight' });
  const refused = (e: unknown) => {
    assert.ok(e instanceof ConnectionError, String(e));
    assert.match(e.message, /refused the key proof: 401/);
    return true;
  };
  await assert.rejects(opening, refused);
  await assert.rejects(call, refused);
  assert.equal(flight(relay.log), 1, 'the call was in RC’s record');
  assert.deepEqual(groupadds(agent), []);
  assert.deepEqual(auditedSignIns(agent).slice(-1), ['auth_resume 401']);
});

test('a ticket the host refuses (used): the full handshake follows and the call is run once, after C2', async (t) => {
  const { agent, key, tickets, relay } = await setup(t);
  const used = tickets.kept!;
  const once = client(t, relay.url, agent, key, tickets);
  await once.open();
  await once.close();
  tickets.kept = used;
  const c = client(t, relay.url, agent, key, tickets);
  const opening = c.open();
  const call = c.admin.users.groupadd({ name: 'after_fallback' });
  await opening;
  assert.deepEqual(await call, { result: 'success' });
  assert.deepEqual(auditedSignIns(agent).slice(-2), ['auth_resume 401', 'auth_ssl 200']);
  assert.deepEqual(
    groupadds(agent).map((r) => `${r.user} ${r.code}`),
    ['admin 200'],
  );
});

const attacks: Array<{ version: 'hsc3' | 'hsc2'; what: string; verdict: (i: number) => Verdict; runs: number }> = [
  { version: 'hsc3', what: 'drops RC’s record (the call in it)', verdict: (i) => (i === 0 ? 'drop' : 'pass'), runs: 0 },
  { version: 'hsc2', what: 'drops RC and passes the call', verdict: (i) => (i === 0 ? 'drop' : 'pass'), runs: 0 },
  { version: 'hsc2', what: 'puts the call before RC', verdict: (i) => (i === 0 ? 'swap-with-next' : 'pass'), runs: 0 },
  { version: 'hsc3', what: 'replays RC’s record', verdict: (i) => (i === 0 ? 'twice' : 'pass'), runs: 1 },
  { version: 'hsc2', what: 'replays the call', verdict: (i) => (i === 1 ? 'twice' : 'pass'), runs: 1 },
];

for (const { version, what, verdict, runs } of attacks) {
  test(`${version}: a bridge that ${what} cannot get it run without RC's sign-in, nor twice`, async (t) => {
    const { agent, key, tickets, relay } = await setup(t, version);
    relay.arm(verdict);
    const c = client(t, relay.url, agent, key, tickets);
    const outcome = await Promise.allSettled([c.open(), c.admin.users.groupadd({ name: 'attacked' })]);
    if (runs === 0) for (const o of outcome) assert.equal(o.status, 'rejected', 'the opening and the call fail');
    // Give a replayed copy time to reach the host.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const rows = groupadds(agent);
    assert.equal(rows.length, runs, JSON.stringify(rows));
    for (const row of rows) assert.equal(row.user, 'admin', 'run only on the channel RC signed in');
    if (runs === 0) assert.ok(!auditedSignIns(agent).some((line) => line.endsWith('resumed')), 'no resumed sign-in without RC');
  });
}

/** A resumed opening through the middle with `meddling`, a call made at once; it must succeed, resumed. */
async function resumedCall(t: TestContext, meddling: SignInMeddling, name: string, signInTicketsFor?: (key: TestKey, url: string) => BridgeTicketStore) {
  const { agent, key, tickets, relay } = await setup(t, 'hsc3', meddling);
  const c = client(t, relay.url, agent, key, tickets, signInTicketsFor ? { signInTickets: signInTicketsFor(key, relay.url) } : {});
  const opening = c.open();
  const call = c.admin.users.groupadd({ name });
  await opening;
  assert.deepEqual(await call, { result: 'success' });
  assert.deepEqual(auditedSignIns(agent).slice(-1), ['auth_ssl 200 resumed']);
  assert.deepEqual(
    groupadds(agent).map((r) => `${r.user} ${r.code}`),
    ['admin 200'],
    'run once',
  );
  return relay;
}

test('a bridge from before early relay (no `early_relay` in its greeting): R1 waits for the sign-in’s answer and goes to the host’s id', async (t) => {
  const relay = await resumedCall(t, { stripEarlyRelay: true }, 'piped_late_r1');
  const at = (e: string) => relay.log.indexOf(e);
  assert.equal(at('>R1@host'), -1, relay.log.join(' '));
  assert.ok(at('<S2') >= 0 && at('<S2') < at('>R1'), relay.log.join(' '));
});

test('the bridge says it dropped the early R1 (no host there yet): R1 goes again, to the host’s id, and the call runs once', async (t) => {
  const relay = await resumedCall(t, { dropEarlyR1: true }, 'piped_again');
  const r1s = relay.log.filter((e) => e.startsWith('>R1'));
  assert.deepEqual(r1s, ['>R1@host', '>R1'], relay.log.join(' '));
});

test('the bridge refuses the sign-in ticket: the R1 behind it is dropped with it, and goes again behind the key’s stage 2; the call runs once', async (t) => {
  const signInTickets = memoryBridgeTicketStore();
  const relay = await resumedCall(t, {}, 'piped_after_refusal', (key, url) => {
    // A ticket this client would present (its bridge, its key, not expired) that the bridge cannot open.
    const secret = Buffer.alloc(32, 7).toString('base64');
    signInTickets.save({ ticket: 'bst1.e30.AAAA', secret, md5Key: md5Of(key), bridge: relayUrl(url), expiresAt: Date.now() + 3_600_000 });
    return signInTickets;
  });
  const r1s = relay.log.filter((e) => e.startsWith('>R1'));
  assert.deepEqual(r1s, ['>R1@host', '>R1@host'], relay.log.join(' '));
  assert.deepEqual(
    relay.log.filter((e) => e === '>S2' || e === '<S2' || e.startsWith('>R1')),
    ['>S2', '>R1@host', '<S2', '>S2', '>R1@host', '<S2'],
  );
  assert.notEqual(signInTickets.load()?.ticket, 'bst1.e30.AAAA', 'the refused ticket is forgotten');
});

test('a pinned host and no ticket: C1 leaves behind the bridge sign-in, and the full handshake opens the channel', async (t) => {
  const { agent, key, tickets, relay } = await setup(t);
  tickets.kept = undefined;
  const c = client(t, relay.url, agent, key, tickets);
  await c.open();
  assert.deepEqual(await c.admin.users.groupadd({ name: 'full_early' }), { result: 'success' });
  const at = (e: string) => relay.log.indexOf(e);
  assert.ok(at('>S2') >= 0 && at('>S2') < at('>C1@host') && at('>C1@host') < at('<S2'), relay.log.join(' '));
  assert.equal(at('>C1'), -1, 'C1 went once');
  assert.deepEqual(auditedSignIns(agent).slice(-1), ['auth_ssl 200']);
  assert.ok(tickets.load()?.pipelining, 'and left a ticket for the next one');
});
