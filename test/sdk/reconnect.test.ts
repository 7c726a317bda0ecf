/**
 * Reconnects: the connection drops (the client's socket is terminated under it); the SDK reconnects
 * with backoff, resumes the same session with `auth_token` (no new sign-in), re-subscribes, and jobs
 * started before the drop still complete. An expired token falls back to the configured sign-in;
 * without one the client fails cleanly.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestClient } from '../helpers/agent.ts';
import { ConnectionError, type HostadmEvent } from '../../client/sdk/src/node.ts';
import { eventJobId } from '../../client/sdk/src/jobs.ts';
import { agentFor, assertIdentify, clientFor, SIM_PASSWORD, Sockets, until } from './support.ts';

const fastReconnect = { initialDelayMs: 20, maxDelayMs: 200 };

test('after a drop the client reconnects, resumes the same token, and re-subscribes', async (t) => {
  const agent = await agentFor(t);
  const sockets = new Sockets();
  let asked = 0;
  const client = await clientFor(t, agent, {
    webSocket: sockets.ctor,
    reconnect: fastReconnect,
    auth: {
      username: 'admin',
      password: () => {
        asked++;
        return SIM_PASSWORD;
      },
    },
  });
  const token = client.session!.token;
  const events: HostadmEvent[] = [];
  const listener = client.events.listen('dispatcher', (e) => events.push(e));
  await listener.ready;
  const disconnects: number[] = [];
  const reconnects: number[] = [];
  client.on('disconnect', (info) => disconnects.push(info.code));
  client.on('reconnect', ({ attempt }) => reconnects.push(attempt));

  // A request in flight when the connection drops fails: whether it ran is unknown.
  const dropped = sockets.last;
  dropped.holding = true;
  const inFlight = client.admin.users.usershow();
  await until(() => dropped.held.length === 1, 5000, 'the request to be sent');
  // One not yet sent when the socket goes down is sent on the next connection.
  const notYetSent = client.admin.users.groupshow();
  dropped.terminate();
  await assert.rejects(inFlight, (err: unknown) => err instanceof ConnectionError && /lost/.test(err.message));
  // A request made while reconnecting waits and then succeeds.
  const meanwhile = client.identify();
  await until(() => reconnects.length === 1, 5000, 'the reconnect');
  assertIdentify(await meanwhile);
  assert.ok(Object.keys(await notYetSent).includes('wheel'));
  assert.equal(disconnects.length, 1);
  assert.equal(sockets.all.length, 2);
  assert.equal(client.state, 'open');
  assert.equal(client.session!.token, token, 'the same session resumed');
  assert.equal(client.session!.method, 'token');
  assert.equal(asked, 1, 'no new password sign-in');

  // The subscription came back with the connection.
  const other = await TestClient.connect(agent.url);
  t.after(() => other.close());
  await other.login('admin');
  await other.request('rpc', 'dispatcher', { action: 'run', after: 'echo after' });
  await until(
    () => events.some((e) => e.name === 'dispatcher' && eventJobId(e.args) === 'after' && e.args.state === 'finished'),
    5000,
    'the event after reconnecting',
  );
  await listener.close();
});

test('a job started before a drop still completes through its handle', async (t) => {
  const agent = await agentFor(t);
  const sockets = new Sockets();
  const client = await clientFor(t, agent, { webSocket: sockets.ctor, reconnect: fastReconnect });
  const running = await client.rpc.dispatcher.run({ across: ['sleep 0.4', 'echo made it'] });
  const quick = await client.rpc.dispatcher.run({ gap: 'echo in the gap' });
  sockets.last.terminate();
  // `across` finishes after the reconnect (events); `gap` finished while disconnected (its record).
  assert.equal(((await running.done) as { log: string }).log, 'made it\n');
  assert.equal((await quick.done).success, 'true');
});

test('an expired token is replaced by a fresh sign-in on reconnect; with only a token the client fails', async (t) => {
  const agent = await agentFor(t);
  const sockets = new Sockets();
  const client = await clientFor(t, agent, { webSocket: sockets.ctor, reconnect: fastReconnect, keepAlive: false });
  const first = client.session!.token;
  const sessions: string[] = [];
  client.on('session', (s) => sessions.push(s.method));
  agent.clock.advance(301);
  sockets.last.terminate();
  await until(() => client.state === 'open' && sockets.all.length === 2 && sessions.length > 0, 5000, 'the reconnect');
  assert.deepEqual(sessions, ['password']);
  assert.notEqual(client.session!.token, first);
  assert.ok(Object.keys(await client.admin.users.usershow()).includes('admin'));

  const tokenOnly = await clientFor(t, agent, { auth: { token: client.session!.token }, webSocket: sockets.ctor, reconnect: fastReconnect, keepAlive: false });
  const closed = new Promise<unknown>((resolve) => tokenOnly.on('close', ({ error }) => resolve(error)));
  agent.clock.advance(301);
  sockets.last.terminate();
  const error = await closed;
  assert.ok(error instanceof ConnectionError);
  assert.match(error.message, /could not resume the session/);
  assert.equal(tokenOnly.state, 'closed');
  await assert.rejects(tokenOnly.identify(), ConnectionError);
});

test('with reconnect off, a drop closes the client; waiting job handles reject with ConnectionError', async (t) => {
  const agent = await agentFor(t);
  const sockets = new Sockets();
  const client = await clientFor(t, agent, { webSocket: sockets.ctor, reconnect: false });
  const job = await client.rpc.dispatcher.run({ longer: 'sleep 5' });
  sockets.last.terminate();
  await assert.rejects(job.done, ConnectionError);
  assert.equal(client.state, 'closed');
  await assert.rejects(client.query(), ConnectionError);
});
