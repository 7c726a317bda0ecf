/**
 * Events over real WebSockets: subscribe/unsubscribe, who receives a published event, the replay of
 * the last event on subscribe, name spellings, errors, and that only signed-in connections get events.
 *
 * "Not delivered" is checked without timers: the agent writes an event to every subscribed socket
 * while publishing, so after a later request's reply arrives on the same socket, any event for that
 * socket would already have arrived before it.
 */
import { EVERYONE } from '@hostadm/agent/events/audience.ts';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ErrorArgs } from '@hostadm/shared/protocol/errors.ts';
import { rest, SIM_PASSWORD, type TestClient, type Envelope, agentFor, clientFor } from '../helpers/agent.ts';

/** Waits for a reply on the connection, after which every event sent to it before has arrived. */
async function settle(client: TestClient): Promise<void> {
  const reply = await client.request('rpc', 'identify', {});
  assert.equal(reply.name, 'response');
}

function eventEnvelope(name: string, payload: unknown): Envelope {
  return { id: '', name: 'event', namespace: 'events', args: { name, args: payload } };
}

/** The envelope without its `args.time`, which must be the ISO 8601 time the event was published. */
function untimed(envelope: Envelope): Envelope {
  const args = envelope.args as { time?: unknown } & Record<string, unknown>;
  assert.match(String(args.time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, JSON.stringify(envelope));
  const { time: _time, ...rest } = args;
  return { ...envelope, args: rest };
}

test('subscribing needs a signed-in connection', async (t) => {
  const agent = await agentFor(t);
  const client = await clientFor(t, agent);

  const refused = await client.request('events', 'subscribe', ['dispatcher']);
  assert.equal(refused.name, 'error');
  assert.deepEqual(refused.args, { code: 401, message: 'Unauthorized' });

  agent.services.events.publish('dispatcher', { job: 'before-login' }, EVERYONE);
  await settle(client);
  assert.deepEqual(client.events, []);

  await client.login('operator');
  const ok = await client.request('events', 'subscribe', ['dispatcher']);
  assert.deepEqual(ok.args, { subscribe: ['dispatcher'] });
});

test('a published event reaches exactly the connections subscribed to it, in the documented envelope', async (t) => {
  const agent = await agentFor(t);
  const subscribed = await clientFor(t, agent, 'admin');
  const otherKind = await clientFor(t, agent, 'admin');
  const notSubscribed = await clientFor(t, agent, 'operator');

  const reply = await subscribed.request('events', 'subscribe', ['dispatcher'], 'sub-1');
  assert.deepEqual(reply, { id: 'sub-1', name: 'response', namespace: 'events', args: { subscribe: ['dispatcher'] } });
  assert.deepEqual((await otherKind.request('events', 'subscribe', ['life-preserver'])).args, { subscribe: ['life-preserver'] });

  const payload = { proc_id: 'admin-1', success: 'true', cmd_list: ['/usr/bin/true'], log: '' };
  const delivered = agent.services.events.publish('dispatcher', payload, EVERYONE);
  assert.equal(delivered, 1);

  const event = await subscribed.nextEvent();
  assert.deepEqual(untimed(event), eventEnvelope('dispatcher', payload));

  await settle(subscribed);
  await settle(otherKind);
  await settle(notSubscribed);
  assert.equal(subscribed.events.length, 1);
  assert.deepEqual(otherKind.events, []);
  assert.deepEqual(notSubscribed.events, []);
});

test('unsubscribe stops delivery on that connection only', async (t) => {
  const agent = await agentFor(t);
  const a = await clientFor(t, agent, 'admin');
  const b = await clientFor(t, agent, 'admin');
  await a.request('events', 'subscribe', ['dispatcher', 'system-state']);
  await b.request('events', 'subscribe', ['dispatcher']);

  agent.services.events.publish('dispatcher', { n: 1 }, EVERYONE);
  await settle(a);
  await settle(b);
  assert.equal(a.events.length, 1);
  assert.equal(b.events.length, 1);

  const reply = await a.request('events', 'unsubscribe', ['dispatcher'], 'unsub-1');
  assert.deepEqual(reply, { id: 'unsub-1', name: 'response', namespace: 'events', args: { unsubscribe: ['dispatcher'] } });

  agent.services.events.publish('dispatcher', { n: 2 }, EVERYONE);
  agent.services.events.publish('system-state', { load: 1 }, EVERYONE);
  await settle(a);
  await settle(b);
  // a still gets what it kept, and no more dispatcher events; b is unaffected.
  assert.deepEqual(a.events.map(untimed), [eventEnvelope('dispatcher', { n: 1 }), eventEnvelope('system-state', { load: 1 })]);
  assert.deepEqual(b.events.map(untimed), [eventEnvelope('dispatcher', { n: 1 }), eventEnvelope('dispatcher', { n: 2 })]);
});

test('subscribing re-sends the last event of that kind at once', async (t) => {
  const agent = await agentFor(t);
  agent.services.events.publish('dispatcher', { n: 1 }, EVERYONE);
  agent.services.events.publish('dispatcher', { n: 2 }, EVERYONE);

  const client = await clientFor(t, agent, 'admin');
  const reply = await client.request('events', 'subscribe', 'dispatcher');
  assert.deepEqual(reply.args, { subscribe: ['dispatcher'] });
  assert.deepEqual(untimed(await client.nextEvent()), eventEnvelope('dispatcher', { n: 2 }));
  await settle(client);
  // Only the last one, once.
  assert.equal(client.events.length, 1);

  // A kind that never fired has nothing to replay.
  await client.request('events', 'subscribe', ['life-preserver']);
  await settle(client);
  assert.equal(client.events.length, 1);
});

test('a single name and the underscore spellings are accepted and answered with the canonical names', async (t) => {
  const agent = await agentFor(t);
  const client = await clientFor(t, agent, 'admin');

  assert.deepEqual((await client.request('events', 'subscribe', 'life_preserver')).args, { subscribe: ['life-preserver'] });
  assert.deepEqual((await client.request('events', 'subscribe', ['system_state'])).args, { subscribe: ['system-state'] });
  assert.deepEqual((await client.request('events', 'subscribe', 'dispatcher')).args, { subscribe: ['dispatcher'] });

  const lp = { message: 'snapshot created', priority: 'info', class: 'snapshot' };
  agent.services.events.publish('life-preserver', lp, EVERYONE);
  agent.services.events.publish('system-state', { cpu: '3%' }, EVERYONE);
  await settle(client);
  assert.deepEqual(client.events.map(untimed), [eventEnvelope('life-preserver', lp), eventEnvelope('system-state', { cpu: '3%' })]);

  assert.deepEqual((await client.request('events', 'unsubscribe', 'life_preserver')).args, { unsubscribe: ['life-preserver'] });
  agent.services.events.publish('life-preserver', lp, EVERYONE);
  await settle(client);
  assert.equal(client.events.length, 2);
});

test('an unknown event name is 400 naming the field, and subscribes nothing', async (t) => {
  const agent = await agentFor(t);
  const client = await clientFor(t, agent, 'admin');

  for (const bad of ['bogus', ['dispatcher', 'bogus'], [], 5, null, undefined]) {
    const reply = await client.request('events', 'subscribe', bad);
    assert.equal(reply.name, 'error', JSON.stringify(bad));
    assert.equal(reply.namespace, 'events');
    const args = reply.args as ErrorArgs;
    assert.equal(args.code, 400);
    assert.ok((args.errors ?? []).length > 0, JSON.stringify(args));
    for (const e of args.errors ?? []) assert.ok(e.field.length > 0 && e.message.length > 0);
  }
  const single = (await client.request('events', 'subscribe', 'bogus')).args as ErrorArgs;
  assert.match(single.message, /dispatcher/);
  assert.match(single.message, /life-preserver/);

  // The refused ['dispatcher', 'bogus'] did not subscribe to dispatcher either.
  agent.services.events.publish('dispatcher', { n: 1 }, EVERYONE);
  await settle(client);
  assert.deepEqual(client.events, []);

  // Unsubscribe checks names the same way; an unknown events request is 404.
  assert.equal(((await client.request('events', 'unsubscribe', ['bogus'])).args as ErrorArgs).code, 400);
  assert.equal(((await client.request('events', 'listen', ['dispatcher'])).args as ErrorArgs).code, 404);
});

test('a bad name inside an array is reported at its position with the valid names', async (t) => {
  const agent = await agentFor(t);
  const client = await clientFor(t, agent, 'admin');

  const reply = await client.request('events', 'subscribe', ['dispatcher', 'bogus']);
  const args = reply.args as ErrorArgs;
  assert.equal(args.code, 400);
  // The caller sent an array as documented; the reply must point at the bad element ("1"), say which
  // names are valid, and not claim that an array is the wrong type.
  assert.deepEqual(
    (args.errors ?? []).map((e) => e.field),
    ['1'],
    JSON.stringify(args),
  );
  assert.match(args.message, /dispatcher.*life-preserver.*system-state/);
  assert.doesNotMatch(args.message, /received array/);
});

test('events have no REST form: PUT /events/subscribe is 404', async (t) => {
  const agent = await agentFor(t);
  for (const path of ['/events/subscribe', '/events/unsubscribe']) {
    const res = await rest(agent, path, ['dispatcher'], { basic: ['admin', SIM_PASSWORD] });
    assert.equal(res.status, 404, path);
    assert.equal((res.body.args as ErrorArgs).code, 404);
  }
});

test('after auth_clear the connection receives no more events', async (t) => {
  const agent = await agentFor(t);
  const client = await clientFor(t, agent, 'admin');
  await client.request('events', 'subscribe', ['dispatcher']);
  agent.services.events.publish('dispatcher', { n: 1 }, EVERYONE);
  await settle(client);
  assert.equal(client.events.length, 1);

  const cleared = await client.request('rpc', 'auth_clear', {});
  assert.equal(cleared.name, 'response');
  agent.services.events.publish('dispatcher', { n: 2 }, EVERYONE);
  await settle(client);
  assert.equal(client.events.length, 1);

  // Signing in again does not bring the old subscription back; subscribing again does.
  await client.login('admin');
  agent.services.events.publish('dispatcher', { n: 3 }, EVERYONE);
  await settle(client);
  assert.equal(client.events.length, 1);
  await client.request('events', 'subscribe', ['dispatcher']);
  await settle(client);
  assert.deepEqual(untimed(client.events.at(-1)!), eventEnvelope('dispatcher', { n: 3 }));
});

test('a connection whose token moved to another connection (auth_token) receives no more events', async (t) => {
  const agent = await agentFor(t);
  const first = await clientFor(t, agent);
  const token = await first.login('admin');
  await first.request('events', 'subscribe', ['dispatcher']);

  const second = await clientFor(t, agent);
  assert.equal((await second.request('rpc', 'auth_token', { token })).name, 'response');
  // The first connection is no longer signed in: its requests are refused...
  assert.deepEqual((await first.request('rpc', 'query', {})).args, { code: 401, message: 'Unauthorized' });

  // ...so it must not keep receiving the host's events either.
  agent.services.events.publish('dispatcher', { secret: 'job output' }, EVERYONE);
  await settle(first);
  assert.deepEqual(first.events, []);
});

test('a connection whose session timed out receives no more events', async (t) => {
  const agent = await agentFor(t);
  const client = await clientFor(t, agent, 'admin');
  await client.request('events', 'subscribe', ['dispatcher']);

  agent.clock.advance(301); // past the 300 s token validity
  const query = await client.request('rpc', 'query', {});

  agent.services.events.publish('dispatcher', { secret: 'job output' }, EVERYONE);
  await settle(client);
  // Whichever way the agent treats a listening connection, it must be consistent: a connection it
  // answers 401 (signed out by the timeout) is not sent the host's events.
  if (query.name === 'error') {
    assert.deepEqual(query.args, { code: 401, message: 'Unauthorized' });
    assert.deepEqual(client.events, [], 'the connection is refused as signed out, yet still receives events');
  }
});

test('a replayed event keeps the time it was published, not the time of the replay', async (t) => {
  const agent = await agentFor(t);
  const live = await clientFor(t, agent, 'admin');
  await live.request('events', 'subscribe', ['dispatcher']);
  agent.services.events.publish('dispatcher', { n: 1 }, EVERYONE);
  const published = (await live.nextEvent()).args as { time: string };
  // Let the clock move past the publication (waiting, not measuring), then subscribe anew.
  while (new Date().toISOString() === published.time) await new Promise((resolve) => setImmediate(resolve));

  const late = await clientFor(t, agent, 'admin');
  await late.request('events', 'subscribe', ['dispatcher']);
  const replayed = await late.nextEvent();
  assert.deepEqual(untimed(replayed), eventEnvelope('dispatcher', { n: 1 }));
  assert.equal((replayed.args as { time: string }).time, published.time);
});
