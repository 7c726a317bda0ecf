/**
 * Resuming a bridged channel with a ticket (docs/protocol.md "Resumption"), through a real bridge to
 * real sim agents: the second connection resumes (the agent's audit line says so), a replayed or
 * expired ticket gets the full handshake instead, a ticket never reaches another host and another host
 * refuses it, a revoked key's ticket is refused, and a bridge that alters R1, RA or RC fails the opening.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { WebSocket, WebSocketServer, type RawData } from 'ws';
import { agentFor, auditedSignIns, clientFor, type TestAgent, registerKey } from '../helpers/agent.ts';
import { rsaKey, signatureProof, type TestKey } from '../helpers/keys.ts';
import { pinnedTransport } from '../helpers/bridge-client.ts';
import { startTestBridge, type TestBridge } from '../bridge/helpers.ts';
import { connect, type ClientTicket, type HostadmClient, type TicketStore } from '../../client/sdk/src/node.ts';

/** A ticket store the test can read and rewrite. */
function recordingStore(): TicketStore & { kept: ClientTicket | undefined; sent: ClientTicket[] } {
  const store = {
    kept: undefined as ClientTicket | undefined,
    sent: [] as ClientTicket[],
    load: () => store.kept,
    save: (ticket: ClientTicket | undefined) => {
      if (ticket === undefined && store.kept) store.sent.push(store.kept);
      store.kept = ticket;
    },
  };
  return store;
}

async function hostBehind(t: TestContext, bridge: TestBridge, nickname: string, key: TestKey): Promise<TestAgent> {
  const agent = await agentFor(t, { bridge: { url: bridge.url, joinToken: await bridge.token('agent', { nickname }), nickname } });
  await agent.bridgeLink?.ready();
  await registerKey(t, agent, key);
  return agent;
}

async function setup(t: TestContext) {
  const bridge = await startTestBridge(t);
  const key = rsaKey();
  const agent = await hostBehind(t, bridge, 'simhost', key);
  // Enroll the key at the bridge once, and pin the host key.
  const store = recordingStore();
  const first = await open(t, bridge.url, agent, key, store, { joinToken: await bridge.token('client') });
  await first.close();
  return { bridge, key, agent, store };
}

async function open(
  t: TestContext,
  bridgeUrl: string,
  agent: TestAgent,
  key: TestKey,
  tickets: TicketStore,
  extra: { joinToken?: string } = {},
): Promise<HostadmClient> {
  const client = await connect({
    transport: pinnedTransport(bridgeUrl, agent, key, tickets, extra),
    reconnect: false,
  });
  t.after(() => client.close());
  return client;
}

test('the second connection resumes with the ticket of the first, and gets a fresh ticket', async (t) => {
  const { bridge, key, agent, store } = await setup(t);
  assert.ok(store.kept, 'the full handshake left a ticket');
  assert.equal(store.kept.hostKey, agent.services.hostKey.publicRaw);
  const firstTicket = store.kept.ticket;
  const client = await open(t, bridge.url, agent, key, store);
  assert.ok((await client.admin.systemmanager.memorystats()).memorystats, 'calls work on the resumed channel');
  assert.deepEqual(auditedSignIns(agent), ['auth_ssl 200', 'auth_ssl 200 resumed']);
  assert.ok(store.kept && store.kept.ticket !== firstTicket, 'each resumed session issues a new ticket');
  assert.equal(store.sent.at(-1)?.ticket, firstTicket);
  await client.close();
  // And the chain goes on.
  const third = await open(t, bridge.url, agent, key, store);
  assert.ok(await third.query());
  assert.deepEqual(auditedSignIns(agent).slice(-1), ['auth_ssl 200 resumed']);
});

test('a bridge that cannot be reached does not spend the ticket: the next connection resumes with it', async (t) => {
  const { bridge, key, agent, store } = await setup(t);
  const kept = store.kept!;
  const unreachable = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => unreachable.once('listening', resolve));
  const { port } = unreachable.address() as { port: number };
  await new Promise<void>((resolve) => unreachable.close(() => resolve()));
  await assert.rejects(open(t, `ws://127.0.0.1:${port}`, agent, key, store), /ECONNREFUSED|cannot connect/);
  assert.equal(store.kept?.ticket, kept.ticket, 'still stored');
  const client = await open(t, bridge.url, agent, key, store);
  assert.ok(await client.query());
  assert.deepEqual(auditedSignIns(agent).slice(-1), ['auth_ssl 200 resumed']);
});

test('a replayed ticket is refused; the client falls back to the full handshake', async (t) => {
  const { bridge, key, agent, store } = await setup(t);
  const used = store.kept!;
  (await open(t, bridge.url, agent, key, store)).close();
  store.kept = used; // the same ticket once more (a copy of an old profile, or a replay)
  const client = await open(t, bridge.url, agent, key, store);
  assert.ok(await client.query());
  assert.deepEqual(auditedSignIns(agent).slice(-3), ['auth_ssl 200 resumed', 'auth_resume 401', 'auth_ssl 200']);
  assert.ok(store.kept && store.kept.ticket !== used.ticket, 'the full handshake left a new ticket');
});

test('an expired ticket gets the full handshake', async (t) => {
  const { bridge, key, agent, store } = await setup(t);
  agent.clock.advance(9 * 3600); // past the 8-hour lifetime, by the agent's clock
  const client = await open(t, bridge.url, agent, key, store);
  assert.ok(await client.query());
  assert.deepEqual(auditedSignIns(agent).slice(-2), ['auth_resume 401', 'auth_ssl 200']);
});

test('a ticket never goes to another host, and another host refuses it', async (t) => {
  const { bridge, key, store } = await setup(t);
  const other = await hostBehind(t, bridge, 'otherhost', key);
  const ticketOfA = store.kept!;
  // The client holds A's ticket but opens B: it does not send it.
  (await open(t, bridge.url, other, key, store)).close();
  assert.deepEqual(auditedSignIns(other), ['auth_ssl 200'], 'B saw no resumption');
  // A client tricked into taking A's ticket for B's (a rewritten profile): B does not know it.
  store.kept = { ...ticketOfA, hostKey: other.services.hostKey.publicRaw };
  const client = await open(t, bridge.url, other, key, store);
  assert.ok(await client.query());
  assert.deepEqual(auditedSignIns(other).slice(-2), ['auth_resume 401', 'auth_ssl 200']);
});

test('a revoked key or a key moved to another user: its ticket no longer signs anyone in', async (t) => {
  const { bridge, key, agent, store } = await setup(t);
  const ticket = store.kept!;
  assert.ok(agent.services.keys.revoke('admin', key.pubKeyB64), 'the key was registered to admin');
  // The agent tells its bridge at once, so the bridge no longer lets this key reach the host at all.
  await assert.rejects(open(t, bridge.url, agent, key, store));
  assert.ok(!auditedSignIns(agent).some((line) => line.endsWith('resumed')));
  // The same key registered again, to operator: the ticket was admin's, so the agent refuses it and the
  // full handshake signs the key in as operator.
  const operator = await clientFor(t, agent, 'operator');
  const token = await operator.login('operator');
  const registered = await operator.call('settings', 'register_ssl_cert', { pub_key: key.pubKeyB64, proof: signatureProof(key, 'register-proof', token) });
  assert.equal(registered.name, 'response', JSON.stringify(registered.args));
  store.kept = ticket;
  const client = await open(t, bridge.url, agent, key, store);
  assert.ok(await client.query());
  assert.deepEqual(auditedSignIns(agent).slice(-2), ['auth_resume 401', 'auth_ssl 200']);
  const last = agent.services.audit.recent(50).find((row) => row.name === 'auth_ssl' && row.code === 200);
  assert.equal(last?.user, 'operator');
});

type Leg = 'to-host' | 'to-client';

/** A bridge in the middle that may rewrite one relayed frame on one leg. */
async function meddlingBridge(t: TestContext, bridgeUrl: string, meddle: (leg: Leg, body: string, binary: boolean) => string): Promise<string> {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => server.once('listening', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  server.on('connection', (client, request) => {
    const upstream = new WebSocket(new URL(request.url ?? '/', bridgeUrl).toString());
    const queue: Array<string | Buffer> = [];
    upstream.on('open', () => queue.splice(0).forEach((f) => upstream.send(f, { binary: typeof f !== 'string' })));
    // Binary frames (hsc2's sealed frames) stay binary: the meddler sees their bytes as latin1 text.
    const rewrite = (leg: Leg, data: RawData, binary: boolean): string | Buffer => {
      const frame = (data as Buffer).toString(binary ? 'latin1' : 'utf8');
      const nl = frame.indexOf('\n');
      const out = nl > 0 && !frame.startsWith('{') ? `${frame.slice(0, nl + 1)}${meddle(leg, frame.slice(nl + 1), binary)}` : frame;
      return binary ? Buffer.from(out, 'latin1') : out;
    };
    upstream.on('message', (data: RawData, binary) => client.send(rewrite('to-client', data, binary), { binary }));
    upstream.on('close', () => client.close());
    client.on('close', () => upstream.close());
    client.on('message', (data: RawData, binary) => {
      const frame = rewrite('to-host', data, binary);
      if (upstream.readyState === WebSocket.OPEN) upstream.send(frame, { binary });
      else queue.push(frame);
    });
  });
  const { port } = server.address() as { port: number };
  return `ws://127.0.0.1:${port}${new URL(bridgeUrl).pathname}`;
}

const flipFirstByte = (b64: string) => {
  const bytes = Buffer.from(b64, 'base64');
  bytes[0]! ^= 1;
  return bytes.toString('base64');
};

test('a bridge altering R1, RA or RC fails the opening (no quiet fallback)', async (t) => {
  const { bridge, key, agent, store } = await setup(t);
  const meddles: Record<string, (leg: Leg, body: string, binary: boolean) => string> = {
    'R1 client_nonce': (leg, body) => {
      if (leg !== 'to-host' || !body.includes('"auth_resume"')) return body;
      const env = JSON.parse(body) as { args: { client_nonce: string } };
      env.args.client_nonce = flipFirstByte(env.args.client_nonce);
      return JSON.stringify(env);
    },
    'RA confirm': (leg, body) => {
      if (leg !== 'to-client' || !body.includes('"hsr1"')) return body;
      const env = JSON.parse(body) as { args: { confirm: string } };
      env.args.confirm = flipFirstByte(env.args.confirm);
      return JSON.stringify(env);
    },
    'RC sealed frame': (() => {
      let afterRa = false;
      return (leg: Leg, body: string, binary: boolean) => {
        if (leg === 'to-client' && body.includes('"hsr1"')) afterRa = true;
        if (leg !== 'to-host' || !afterRa) return body;
        if (binary) {
          // hsc2: seq ‖ ciphertext ‖ tag, raw: flip the tag's last bit.
          afterRa = false;
          return `${body.slice(0, -1)}${String.fromCharCode(body.charCodeAt(body.length - 1) ^ 1)}`;
        }
        if (!body.startsWith('hsc1.')) return body;
        afterRa = false;
        const bytes = Buffer.from(body.slice('hsc1.'.length), 'base64');
        bytes[bytes.length - 1]! ^= 1;
        return `hsc1.${bytes.toString('base64')}`;
      };
    })(),
  };
  for (const [what, meddle] of Object.entries(meddles)) {
    const middle = await meddlingBridge(t, bridge.url, meddle);
    assert.ok(store.kept, `${what}: a ticket to try`);
    await assert.rejects(open(t, middle, agent, key, store), (err: unknown) => {
      assert.match(String(err), what === 'RC sealed frame' ? /tampered|authentication/ : /bad-signature/, what);
      return true;
    });
    assert.equal(store.kept, undefined, `${what}: the used ticket is gone, no new one came`);
    // A clean connection (full handshake) gives the next case its ticket.
    (await open(t, bridge.url, agent, key, store)).close();
  }
  assert.equal(auditedSignIns(agent).filter((line) => line.endsWith('resumed')).length, 0, 'no altered resumption signed in');
});
