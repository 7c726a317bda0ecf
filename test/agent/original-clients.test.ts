/**
 * Clients written for the original service keep working (issue 14, item 8): its own test client
 * (trueos/sysadm `tests/sendwebsocket.js`) sends its sign-in, one request and a close frame at once
 * and prints the replies; and the original's names (`sysadm`, `lifepreserver`, `iocage`, `iohyve`)
 * reach the spec's classes, over WebSocket and REST, answered in the names the request used.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { agentFor, clientFor, rest, SIM_PASSWORD, type Envelope } from '../helpers/agent.ts';
import { classes } from '@hostadm/agent/classes/index.ts';

/**
 * What sendwebsocket.js does: on open, send the sign-in frame (spelled as it spells it), the request
 * and a close frame in one go, then collect every reply until the socket closes.
 */
async function likeSendWebSocket(url: string, request: string): Promise<{ replies: Envelope[]; code: number }> {
  const ws = new WebSocket(url);
  const replies: Envelope[] = [];
  ws.onmessage = (evt) => replies.push(JSON.parse(String(evt.data)) as Envelope);
  ws.onopen = () => {
    ws.send(`{ "namespace":"rpc", "name":"auth", "id":"authrequest", "args": { "username":"admin", "password":"${SIM_PASSWORD}" } }`);
    ws.send(request);
    ws.close();
  };
  const code = await new Promise<number>((resolve, reject) => {
    ws.onclose = (evt) => resolve(evt.code);
    ws.onerror = (evt) => reject(evt.error);
  });
  return { replies, code };
}

test('sign-in, a request and a close frame sent at once: both replies arrive before the socket closes', async (t) => {
  const agent = await agentFor(t);
  const request = '{ "namespace":"admin", "name":"systemmanager", "id":"fooid", "args":{ "action":"memorystats" } }';
  const { replies, code } = await likeSendWebSocket(agent.url, request);
  assert.equal(code, 1005, 'the close the client asked for (no status), not an error');
  assert.equal(replies.length, 2, `two replies: ${JSON.stringify(replies)}`);
  const [signIn, answer] = replies as [Envelope, Envelope];
  assert.equal(signIn.id, 'authrequest');
  assert.equal(signIn.name, 'response');
  assert.match((signIn.args as [string, number])[0], /^[A-Za-z0-9]{40}$/);
  assert.equal(answer.id, 'fooid');
  assert.equal(answer.name, 'response');
  assert.equal(answer.namespace, 'admin');
  const stats = (answer.args as { memorystats: Record<string, string> }).memorystats;
  for (const field of ['active', 'cache', 'free', 'inactive', 'wired']) assert.match(stats[field] ?? '', /^\d+$/, field);
});

test('the original test client in the original names: namespace sysadm is answered as sysadm', async (t) => {
  const agent = await agentFor(t);
  const request = '{ "namespace":"sysadm", "name":"users", "id":"fooid", "args":{ "action":"usershow" } }';
  const { replies } = await likeSendWebSocket(agent.url, request);
  const answer = replies.find((r) => r.id === 'fooid');
  assert.ok(answer, `a reply to fooid: ${JSON.stringify(replies)}`);
  assert.equal(answer.name, 'response');
  assert.equal(answer.namespace, 'sysadm');
  assert.equal((answer.args as Record<string, { name: string }>).admin?.name, 'admin');
});

test('a refused request before the close frame is answered too (the 401 of a client that never signed in)', async (t) => {
  const agent = await agentFor(t);
  const ws = new WebSocket(agent.url);
  const replies: Envelope[] = [];
  ws.on('message', (data) => replies.push(JSON.parse(data.toString()) as Envelope));
  ws.on('open', () => {
    ws.send('{ "namespace":"sysadm", "name":"services", "id":"early", "args":{ "action":"list_services" } }');
    ws.close();
  });
  await new Promise((resolve) => ws.on('close', resolve));
  assert.deepEqual(replies, [{ id: 'early', name: 'error', namespace: 'rpc', args: { code: 401, message: 'Unauthorized' } }]);
});

test('over WebSocket: sysadm and the product class names reach the spec classes, replies keep the request names', async (t) => {
  // snapshot is left out here, so lifepreserver is seen to reach a class the host does not serve.
  const agent = await agentFor(t, { classes: { ...classes, 'admin/snapshot': null } });
  const admin = await clientFor(t, agent, 'admin');
  const listed = await admin.request('sysadm', 'services', { action: 'list_services' });
  assert.equal(listed.name, 'response');
  assert.equal(listed.namespace, 'sysadm');
  const same = await admin.request('admin', 'services', { action: 'list_services' });
  assert.deepEqual(listed.args, same.args, 'the same class answers under both namespaces');

  // The product names route to snapshot, jail and vm: iocage is the jail class, iohyve the vm class,
  // and what this host does not serve it says so in the request's words.
  const jails = await admin.request('sysadm', 'iocage', { action: 'listjails' });
  assert.equal(jails.namespace, 'sysadm');
  assert.deepEqual(jails.args, (await admin.request('admin', 'jail', { action: 'listjails' })).args);
  const vms = await admin.request('admin', 'iohyve', { action: 'listvms' });
  assert.equal(vms.name, 'response');
  assert.deepEqual(Object.keys((vms.args as { listvms: object }).listvms), ['fbsd', 'debian']);
  for (const [namespace, name] of [['sysadm', 'lifepreserver']] as const) {
    const reply = await admin.request(namespace, name, { action: 'list' });
    assert.equal(reply.name, 'error');
    assert.equal(reply.namespace, namespace);
    const { code, message } = reply.args as { code: number; message: string };
    assert.equal(code, 404);
    assert.equal(message, `${namespace}/${name} is not available on this host (platform sim)`);
  }

  const badAction = await admin.request('sysadm', 'services', { action: 'launch' });
  assert.equal((badAction.args as { code: number }).code, 400);
  assert.match((badAction.args as { message: string }).message, /of sysadm\/services;/);
  // `rpc` has no product names, and no other namespace is taken for `admin`.
  assert.equal(((await admin.request('rpc', 'iocage', { action: 'listjails' })).args as { code: number }).code, 404);
  assert.equal(((await admin.request('trueos', 'services', { action: 'list_services' })).args as { code: number }).code, 404);
});

test('over REST: PUT /sysadm/<class> is PUT /admin/<class>; the original class names too', async (t) => {
  const agent = await agentFor(t);
  const basic: [string, string] = ['admin', SIM_PASSWORD];
  const viaSysadm = await rest(agent, '/sysadm/systemmanager', { action: 'systemmanager' }, { basic });
  assert.equal(viaSysadm.status, 200);
  assert.equal((viaSysadm.body.args as { systemmanager: { hostname: string } }).systemmanager.hostname.length > 0, true);

  const iohyve = await rest(agent, '/sysadm/iohyve', { action: 'listvms' }, { basic });
  assert.equal(iohyve.status, 200);
  assert.deepEqual(Object.keys((iohyve.body.args as { listvms: object }).listvms), ['fbsd', 'debian']);
  const lifepreserver = await rest(agent, '/sysadm/lifepreserver', { action: 'listcron' }, { basic });
  assert.equal(lifepreserver.status, 200);
  assert.deepEqual(lifepreserver.body.args, (await rest(agent, '/admin/snapshot', { action: 'listcron' }, { basic })).body.args);

  const get = await fetch(`${agent.httpUrl}/sysadm/services`);
  assert.equal(get.status, 405);
  assert.equal(get.headers.get('allow'), 'PUT, POST');
});
