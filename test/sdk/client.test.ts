/**
 * The SDK in Node against a real in-process agent: sign-in by password, token and key; typed calls;
 * errors as typed exceptions (401/403/404/400 with field errors, locally and from the host); request
 * timeouts and cancellation; reply checks; connection failures; the transport port.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { connect, ConnectionError, HostadmRequestError, ReplyContractError, TimeoutError, type TransportFactory } from '../../client/sdk/src/node.ts';
import { classes } from '@hostadm/agent/classes/index.ts';
import { agentFor, assertIdentify, clientFor, SIM_PASSWORD, Sockets } from './support.ts';

test('password sign-in, typed calls, identify and query', async (t) => {
  const agent = await agentFor(t);
  const client = await clientFor(t, agent);
  assert.equal(client.state, 'open');
  const session = client.session!;
  assert.equal(session.method, 'password');
  assert.equal(session.ttlSeconds, 300);
  assert.match(session.token, /^[A-Za-z0-9]{40}$/);

  const users = await client.admin.users.usershow();
  assert.equal(users.admin?.uid, '1001');
  const { systemmanager } = await client.admin.systemmanager.systemmanager();
  assert.equal(systemmanager.hostname, 'simhost');
  assertIdentify(await client.identify());
  const query = await client.query();
  assert.equal(query['admin/users'], 'read/write');
  // An alias resolves to the canonical action.
  const certs = await client.call('admin', 'settings', 'list_ssl_certificates');
  assert.deepEqual(certs, {});
  // The escape hatch: any envelope, no contract.
  assertIdentify(await client.request('rpc', 'identify', {}));
});

test('token sign-in resumes a session; a bad token is a 401 HostadmRequestError', async (t) => {
  const agent = await agentFor(t);
  const first = await clientFor(t, agent);
  const token = first.session!.token;
  const second = await clientFor(t, agent, { auth: { token } });
  assert.equal(second.session!.method, 'token');
  assert.equal(second.session!.token, token);
  assert.ok(Object.keys(await second.admin.users.usershow()).includes('root'));

  await assert.rejects(
    connect({ url: agent.url, auth: { token: 'x'.repeat(40) } }),
    (err: unknown) => err instanceof HostadmRequestError && err.code === 401 && err.codeName === 'UNAUTHORIZED' && err.isUnauthorized && !err.local,
  );
});

test('methods are tried in order: a stale token falls back to the password, asked for only then', async (t) => {
  const agent = await agentFor(t);
  let asked = 0;
  const client = await clientFor(t, agent, {
    auth: [
      { token: 'a'.repeat(40) },
      {
        username: 'admin',
        password: () => {
          asked++;
          return SIM_PASSWORD;
        },
      },
    ],
  });
  assert.equal(asked, 1);
  assert.equal(client.session!.method, 'password');
});

test('key sign-in: auth_ssl with a WebCrypto signature, for RSA (PKCS#8 and PKCS#1) and Ed25519 keys', async (t) => {
  const agent = await agentFor(t);
  const admin = await clientFor(t, agent);
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const ed = generateKeyPairSync('ed25519');
  const keys = [
    { label: 'rsa pkcs8', pair: rsa, privatePem: rsa.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() },
    { label: 'ed25519', pair: ed, privatePem: ed.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() },
  ];
  for (const k of keys) {
    const publicPem = k.pair.publicKey.export({ type: 'spki', format: 'pem' }).toString();
    await admin.registerKey({ certPem: publicPem, privatePem: k.privatePem, nickname: k.label });
  }
  const listed = await admin.admin.settings.list_ssl_certs();
  assert.deepEqual(
    Object.values(listed.admin ?? {})
      .map((d) => d.nickname)
      .sort(),
    ['ed25519', 'rsa pkcs8'],
  );

  const pkcs1 = rsa.privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
  assert.match(pkcs1, /BEGIN RSA PRIVATE KEY/);
  for (const privatePem of [keys[0]!.privatePem, pkcs1, keys[1]!.privatePem]) {
    const client = await clientFor(t, agent, { auth: { key: { privatePem } } });
    assert.equal(client.session!.method, 'key');
    assert.equal((await client.admin.users.usershow()).admin?.name, 'admin');
    await client.close();
  }

  // An unregistered key is refused like a wrong password.
  const stranger = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  await assert.rejects(
    connect({ url: agent.url, auth: { key: { privatePem: stranger } } }),
    (err: unknown) => err instanceof HostadmRequestError && err.code === 401,
  );
});

test('refusals are typed: 403 and 404 from the host, 400 with every field named (locally and from the host)', async (t) => {
  // A host that leaves beadm out (as a Linux host without a ZFS root does): in the contracts, not served.
  const agent = await agentFor(t, { classes: { ...classes, 'admin/beadm': null } });
  const operator = await clientFor(t, agent, { auth: { username: 'operator', password: SIM_PASSWORD } });
  await assert.rejects(operator.admin.systemmanager.killproc({ pid: 1, signal: 'TERM' }), (err: unknown) => {
    assert.ok(err instanceof HostadmRequestError);
    assert.equal(err.code, 403);
    assert.equal(err.codeName, 'FORBIDDEN');
    assert.equal(err.local, false);
    assert.deepEqual(err.target, { namespace: 'admin', name: 'systemmanager', action: 'killproc' });
    assert.match(err.message, /needs full access/);
    return true;
  });

  const admin = await clientFor(t, agent);
  // beadm is in the contracts but not served by this host.
  await assert.rejects(admin.call('admin', 'beadm', 'listbes'), (err: unknown) => err instanceof HostadmRequestError && err.code === 404 && !err.local);
  await assert.rejects(admin.request('admin', 'nosuchclass', { action: 'x' }), (err: unknown) => err instanceof HostadmRequestError && err.code === 404);

  const bad = { name: 5, comment: 'x\u0001' } as never;
  const local = await admin.admin.users.useradd(bad).then(
    () => assert.fail('accepted'),
    (err: unknown) => err as HostadmRequestError,
  );
  assert.ok(local instanceof HostadmRequestError);
  assert.equal(local.code, 400);
  assert.equal(local.local, true);
  const unchecked = await clientFor(t, agent, { validateArgs: false });
  const remote = await unchecked.admin.users.useradd(bad).then(
    () => assert.fail('accepted'),
    (err: unknown) => err as HostadmRequestError,
  );
  assert.ok(remote instanceof HostadmRequestError);
  assert.equal(remote.code, 400);
  assert.equal(remote.local, false);
  // The SDK's check reports the same fields the host does.
  const fields = (e: HostadmRequestError) => e.fieldErrors.map((f) => f.field).sort();
  assert.deepEqual(fields(local), ['comment', 'name', 'password']);
  assert.deepEqual(fields(remote), fields(local));

  await assert.rejects(
    admin.call('admin', 'users', 'nosuchaction'),
    (err: unknown) => err instanceof HostadmRequestError && err.local && err.code === 400 && err.fieldErrors[0]?.field === 'action',
  );
  await assert.rejects(admin.call('admin', 'nosuchclass', 'x'), (err: unknown) => err instanceof HostadmRequestError && err.local && err.code === 404);
});

test('a request times out with TimeoutError, and an AbortSignal cancels waiting; the client keeps working', async (t) => {
  const agent = await agentFor(t);
  const sockets = new Sockets();
  const client = await clientFor(t, agent, { webSocket: sockets.ctor });
  sockets.last.holding = true;
  const started = Date.now();
  await assert.rejects(client.admin.users.usershow(undefined, { timeoutMs: 150 }), (err: unknown) => {
    assert.ok(err instanceof TimeoutError);
    assert.ok(err instanceof ConnectionError);
    assert.equal(err.timeoutMs, 150);
    return true;
  });
  assert.ok(Date.now() - started >= 140);

  const controller = new AbortController();
  const waiting = client.query({ signal: controller.signal });
  controller.abort();
  await assert.rejects(waiting, (err: unknown) => err instanceof Error && err.name === 'AbortError');
  const already = AbortSignal.abort();
  await assert.rejects(client.identify({ signal: already }), (err: unknown) => err instanceof Error && err.name === 'AbortError');

  // The held frames go out now; their late replies are dropped, new requests work.
  sockets.last.release();
  assertIdentify(await client.identify());
});

test('connection failures are ConnectionError; closing rejects what waits', async (t) => {
  const agent = await agentFor(t);
  await assert.rejects(
    connect({ url: 'ws://127.0.0.1:1', connectTimeoutMs: 2000 }),
    (err: unknown) => err instanceof ConnectionError && /127\.0\.0\.1:1/.test(err.message),
  );
  await assert.rejects(connect({ url: 'http://127.0.0.1:1' }), ConnectionError);

  const sockets = new Sockets();
  const client = await clientFor(t, agent, { webSocket: sockets.ctor });
  sockets.last.holding = true;
  const pending = client.admin.users.usershow();
  const stream = client.events.subscribe('dispatcher');
  await client.close();
  assert.equal(client.state, 'closed');
  await assert.rejects(pending, ConnectionError);
  await assert.rejects(stream.ready, ConnectionError);
  await assert.rejects(client.identify(), ConnectionError);
});

test('validateReplies: a reply that breaks its contract is a ReplyContractError (through a custom transport)', async () => {
  const sent: unknown[] = [];
  // A transport double: the port takes any way of carrying envelope text.
  const fake: TransportFactory = {
    description: 'fake://host',
    async open(handlers) {
      return {
        send(text) {
          const req = JSON.parse(text) as { id: string; namespace: string; name: string; args: { action?: string } };
          if (req.name !== 'auth') sent.push({ namespace: req.namespace, name: req.name, args: req.args });
          const args = req.name === 'auth' ? ['t'.repeat(40), 300] : { root: { name: 'root', uid: 0 } };
          queueMicrotask(() => handlers.onMessage(JSON.stringify({ id: req.id, name: 'response', namespace: req.namespace, args })));
        },
        close(code = 1000, reason = '') {
          queueMicrotask(() => handlers.onClose({ code, reason }));
        },
      };
    },
  };
  const strict = await connect({ transport: fake, auth: { username: 'a', password: 'b' }, validateReplies: true, keepAlive: false });
  await assert.rejects(strict.admin.users.usershow(), (err: unknown) => {
    assert.ok(err instanceof ReplyContractError);
    assert.ok(
      err.fieldErrors.some((f) => f.field === 'root.uid'),
      JSON.stringify(err.fieldErrors),
    );
    return true;
  });
  // A call the caller checked itself (callChecked) has its reply checked all the same when asked.
  await assert.rejects(strict.callChecked('admin', 'users', 'usershow'), ReplyContractError);
  await strict.close();
  const lax = await connect({ transport: fake, auth: { username: 'a', password: 'b' }, keepAlive: false });
  assert.deepEqual(await lax.admin.users.usershow(), { root: { name: 'root', uid: 0 } });
  sent.length = 0;
  assert.deepEqual(await lax.callChecked('admin', 'users', 'usershow', {}), { root: { name: 'root', uid: 0 } });
  // Sent as call() sends it: the class is the envelope's name, the action inside args.
  assert.deepEqual(sent, [{ namespace: 'admin', name: 'users', args: { action: 'usershow' } }]);
  await lax.close();
});

test('keep-alive: an idle client keeps its session past the token validity', async (t) => {
  const agent = await agentFor(t);
  const client = await clientFor(t, agent, { keepAlive: 100 });
  const idle = await clientFor(t, agent, { keepAlive: false });
  // 200 s pass on the agent's clock; the keep-alive request refreshes the session, the idle one not.
  agent.clock.advance(200);
  await new Promise((r) => setTimeout(r, 350));
  agent.clock.advance(200);
  assert.ok(Object.keys(await client.admin.users.usershow()).length > 0);
  await assert.rejects(idle.admin.users.usershow(), (err: unknown) => err instanceof HostadmRequestError && err.code === 401);
});
