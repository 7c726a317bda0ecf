/**
 * Requests sealed right after a resumption's proof RC, in its flight (docs/bridge-protocol.md §3 step
 * 9): the test is the bridge (helpers/hostile-bridge.ts) and the client (shared/src/crypto with a real
 * key and ticket), so it chooses exactly what each frame carries. The agent serves such a request only
 * once RC has signed the channel in, even when making the session takes a while (the race this guards
 * against: served beside RC, the request met a channel not yet signed in), and never after a refused RC.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import {
  ChannelSender,
  clientTicketFrom,
  openBinaryBody,
  parseChannelClosedNotice,
  startClientHandshake,
  startClientResumption,
  TICKET_MESSAGE_ID,
  toBase64,
  utf8Encode,
  type ChannelVersion,
  type ClientTicket,
  type SecureChannel,
} from '@hostadm/shared/crypto/index.ts';
import { agentFor, auditedSignIns, clientFor, type TestAgent, registerKey } from '../helpers/agent.ts';
import { rsaKey, type TestKey } from '../helpers/keys.ts';
import { hostileBridge, type Envelope, type HostileBridge } from '../helpers/hostile-bridge.ts';

/** One channel of a client behind the bridge: what it seals goes to the bridge, what comes back is opened in order. */
interface ChannelEnd {
  channel: SecureChannel;
  /** Sealed frames handed to the bridge (hsc3: one record per tick; hsc2: one per envelope). */
  sent: Uint8Array[];
  /** Seals these envelopes in one tick (hsc3: one record) and relays them, unless `relay` says otherwise. */
  send(envelopes: Envelope[]): Promise<void>;
  /** The next `count` envelopes the host sealed for this client, events left out. */
  replies(count: number): Promise<Envelope[]>;
}

function channelEnd(
  bridge: HostileBridge,
  id: string,
  channel: SecureChannel,
  from: number,
  relay = (frame: Uint8Array) => bridge.sendBinary(frame),
): ChannelEnd {
  const sent: Uint8Array[] = [];
  const sender = new ChannelSender(channel, utf8Encode(`${id}\n`), {
    text: () => assert.fail('binary channels only here'),
    binary: (frame) => {
      sent.push(frame);
      relay(frame);
    },
    failed: (cause) => assert.fail(String(cause)),
  });
  let cursor = from;
  const inbox: Envelope[] = [];
  return {
    channel,
    sent,
    async send(envelopes) {
      for (const e of envelopes) sender.send(JSON.stringify(e));
      await sender.drained();
    },
    async replies(count) {
      while (inbox.length < count) {
        const frame = await bridge.next(id, () => true, cursor);
        cursor = bridge.frames.indexOf(frame) + 1;
        if (!('bytes' in frame)) assert.fail(`plain frame to ${id}: ${frame.text}`);
        const opened = openBinaryBody(channel, frame.bytes);
        for (const text of Array.isArray(opened) ? opened : await opened) {
          const env = JSON.parse(text) as Envelope;
          if (env.name !== 'event') inbox.push(env);
        }
      }
      return inbox.splice(0, count);
    },
  };
}

/** A full handshake (C1 with want_ticket, A1, C2) that leaves the client the ticket the host sealed for it. */
async function ticketFromHandshake(bridge: HostileBridge, key: TestKey, agent: TestAgent, id: string, channels: ChannelVersion[]): Promise<ClientTicket> {
  const hs = await startClientHandshake({
    clientKeyPem: key.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    clientSpkiPem: Buffer.from(key.pubKeyB64, 'base64').toString('utf8'),
    channels,
  });
  const since = bridge.frames.length;
  bridge.sendText(id, JSON.stringify({ id: 'c1', name: 'auth_ssl', namespace: 'rpc', args: { ...hs.c1Args, want_ticket: true } }));
  const a1 = JSON.parse(((await bridge.next(id, (f) => 'text' in f, since)) as { text: string }).text) as Envelope;
  const { channel, c2Args, resumptionSecret } = await hs.finish(a1.args);
  const end = channelEnd(bridge, id, channel, bridge.frames.length);
  await end.send([{ id: 'c2', name: 'auth_ssl', namespace: 'rpc', args: c2Args }]);
  const [ticketMessage, signedIn] = await end.replies(2);
  assert.equal(ticketMessage!.id, TICKET_MESSAGE_ID);
  assert.equal((ticketMessage!.args as { pipelining?: unknown }).pipelining, true, 'the ticket says this host takes requests in RC’s flight');
  assert.ok(Array.isArray(signedIn!.args), JSON.stringify(signedIn));
  const ticket = clientTicketFrom(ticketMessage!.args, {
    secret: resumptionSecret,
    hostKey: agent.services.hostKey.publicRaw,
    md5Key: hs.c1Args.md5_key,
    now: Date.now(),
  });
  assert.ok(ticket?.pipelining, 'the client keeps that with the ticket');
  return ticket;
}

/** R1 and RA in plain; the resumed channel and the RC args that prove it. */
async function resume(bridge: HostileBridge, ticket: ClientTicket, id: string, relay?: (frame: Uint8Array) => void) {
  const resumption = await startClientResumption(ticket);
  const since = bridge.frames.length;
  bridge.sendText(id, JSON.stringify({ id: 'hsr1-r1', name: 'auth_resume', namespace: 'rpc', args: resumption.r1Args }));
  const ra = JSON.parse(((await bridge.next(id, (f) => 'text' in f, since)) as { text: string }).text) as Envelope;
  assert.equal(ra.name, 'response', JSON.stringify(ra));
  const { channel, rcArgs } = await resumption.finish(ra.args);
  return { end: channelEnd(bridge, id, channel, bridge.frames.length, relay), rc: { id: 'hsr1-rc', name: 'auth_resume', namespace: 'rpc', args: rcArgs } };
}

async function setup(t: TestContext, version: ChannelVersion) {
  const agent = await agentFor(t);
  const key = rsaKey();
  await registerKey(t, agent, key);
  const bridge = await hostileBridge(t, agent, version === 'hsc2' ? { channelVersions: ['hsc2'] } : {});
  const ticket = await ticketFromHandshake(bridge, key, agent, 'client-first', [version]);
  return { agent, bridge, ticket };
}

const groupadd = (id: string, name: string): Envelope => ({ id, name: 'users', namespace: 'admin', args: { action: 'groupadd', name } });
const groupadds = (agent: TestAgent) => agent.services.audit.recent(1000).filter((r) => r.action === 'groupadd');

/** Makes the session slow to make (the user's groups looked up after a wait), as a loaded host's would be. */
function slowSessions(agent: TestAgent, ms: number): void {
  const accounts = agent.services.platform.accounts;
  const groupsOf = accounts.groupsOf.bind(accounts);
  accounts.groupsOf = async (user) => {
    await new Promise((resolve) => setTimeout(resolve, ms));
    return groupsOf(user);
  };
}

for (const version of ['hsc3', 'hsc2'] as const) {
  const flight = version === 'hsc3' ? 'in RC’s record' : 'in the frame after RC’s';
  test(`${version}: a request ${flight} is served once RC has signed the channel in, even while the session is slow to make`, async (t) => {
    const { agent, bridge, ticket } = await setup(t, version);
    slowSessions(agent, 60);
    const { end, rc } = await resume(bridge, ticket, 'client-pipelined');
    await end.send([rc, groupadd('req-1', 'pipelined'), { id: 'req-2', name: 'query', namespace: 'rpc', args: {} }]);
    assert.equal(end.sent.length, version === 'hsc3' ? 1 : 3, 'RC and the requests left together');
    const replies = await end.replies(4);
    // The ticket and the session first; the requests then, each answered when done (started in order, none waiting for another).
    const lines = replies.map((r) => `${r.id} ${r.name}`);
    assert.deepEqual(
      [...lines.slice(0, 2), ...lines.slice(2).sort()],
      [`${TICKET_MESSAGE_ID} response`, 'hsr1-rc response', 'req-1 response', 'req-2 response'],
      JSON.stringify(replies),
    );
    assert.ok(Array.isArray(replies[1]!.args), 'RC’s reply is the session');
    assert.deepEqual(
      groupadds(agent).map((r) => `${r.user} ${r.code}`),
      ['admin 200'],
      'run once, as the key’s user',
    );
    assert.deepEqual(auditedSignIns(agent).slice(-1), ['auth_ssl 200 resumed']);
  });
}

const refusals: Record<string, (agent: TestAgent, rc: Envelope) => Envelope> = {
  'a wrong confirm': (_agent, rc) => ({ ...rc, args: { confirm: toBase64(new Uint8Array(32).fill(7)) } }),
  'RC past the 30 s window': (agent, rc) => {
    agent.clock.advance(31);
    return rc;
  },
};

for (const [why, refuse] of Object.entries(refusals)) {
  test(`RC refused (${why}): the requests in its flight are never run, and the channel is gone`, async (t) => {
    const { agent, bridge, ticket } = await setup(t, 'hsc3');
    slowSessions(agent, 20);
    const { end, rc } = await resume(bridge, ticket, 'client-refused');
    const since = bridge.frames.length;
    await end.send([refuse(agent, rc), groupadd('req-1', 'never_run')]);
    const [refusal] = await end.replies(1);
    assert.equal(refusal!.id, 'hsr1-rc');
    assert.equal((refusal!.args as { code?: number }).code, 401, JSON.stringify(refusal));
    // The host drops the channel after its refusal: a later frame finds none.
    await end.send([{ id: 'req-2', name: 'query', namespace: 'rpc', args: {} }]);
    const notice = (await bridge.next('client-refused', (f) => 'text' in f, since)) as { text: string };
    assert.match(parseChannelClosedNotice(notice.text) ?? '', /has no channel with you/, notice.text);
    const sealed = bridge.frames.slice(since).filter((f) => f.to === 'client-refused' && 'bytes' in f);
    assert.equal(sealed.length, 1, 'nothing but the refusal was sealed for the client');
    assert.deepEqual(groupadds(agent), [], 'the pipelined change was not run');
    const admin = await clientFor(t, agent, 'admin');
    await admin.login('admin');
    const shown = await admin.call('users', 'groupshow', { name: 'never_run' });
    assert.equal(shown.name, 'error', `the group does not exist: ${JSON.stringify(shown.args)}`);
    assert.deepEqual(auditedSignIns(agent).slice(-1), ['auth_resume 401']);
  });
}

test('a request sealed before RC (the proof out of order) is taken as the proof: refused, neither runs', async (t) => {
  const { agent, bridge, ticket } = await setup(t, 'hsc3');
  const { end, rc } = await resume(bridge, ticket, 'client-misordered');
  await end.send([groupadd('req-1', 'first_in_line'), rc]);
  const [refusal] = await end.replies(1);
  assert.equal(refusal!.id, 'req-1');
  assert.equal((refusal!.args as { code?: number }).code, 401);
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.deepEqual(groupadds(agent), []);
  assert.ok(!auditedSignIns(agent).some((line) => line.endsWith('resumed')), 'RC after it signed nothing in');
});
