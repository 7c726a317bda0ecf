/**
 * `admin/jail` on the simulated FreeBSD host, through a real agent over its WebSocket: every action in
 * the spec's shapes, the jail state rules (progress messages, INFO when already in that state, destroy
 * refused while running with nothing changed), `-e` giving `{uuid}`, the clean actions leaving what
 * hostadm did not make, persistence across a restart, refusals naming the field, and access rules.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agentFor, clientFor, startTestAgent, type TestClient } from '../helpers/agent.ts';
import { expectError } from './services-support.ts';
import { okCall } from './powerd-support.ts';

const WWW = '26e8e027-f00c-11e4-8f7f-3c970e80eb61';
const DB = 'a91e5b8c-3d2f-4e61-b0c7-8f4a2d6e1b93';

const call = (c: TestClient, action: string, args: Record<string, unknown> = {}) => okCall(c, 'jail', action, args);
type Listed = Record<string, { boot: string; ip4: string; jid: string; state: string; tag: string; type: string }>;
const list = async (c: TestClient) => (await call(c, 'listjails')).listjails as Listed;
const uuidOf = async (c: TestClient, tag: string) => Object.entries(await list(c)).find(([, j]) => j.tag === tag)?.[0] as string;

test('listjails, df and getjailsettings in the spec shapes (all four modes)', async (t) => {
  const root = await clientFor(t, await agentFor(t), 'root');
  const jails = await list(root);
  assert.deepEqual(jails[WWW], { boot: 'on', ip4: '192.168.1.20', jid: '1', state: 'up', tag: 'www01', type: 'thickjail' });
  assert.deepEqual(jails[DB], { boot: 'off', ip4: '-', jid: '-', state: 'down', tag: 'db01', type: 'basejail' });
  const df = (await call(root, 'df')).df as Record<string, Record<string, string>>;
  assert.deepEqual(Object.keys(df[DB] ?? {}).sort(), ['ava', 'crt', 'qta', 'res', 'tag', 'use']);
  assert.equal(df[DB]?.tag, 'db01');

  assert.deepEqual(await call(root, 'getjailsettings', { jail: 'db01', prop: 'memoryuse' }), { getjailsettings: { db01: { memoryuse: '2G:deny' } } });
  const all = ((await call(root, 'getjailsettings', { jail: 'db01', prop: 'all' })).getjailsettings as Record<string, Record<string, string>>).db01 ?? {};
  for (const name of ['allow_raw_sockets', 'boot', 'ip4_addr', 'release', 'tag', 'vnet3_mac', 'wallclock']) assert.ok(name in all, name);
  assert.equal(all.release, '13.3-RELEASE');
  assert.deepEqual(await call(root, 'getjailsettings', { jail: 'db01' }), { getjailsettings: { db01: all } });
  const releases = (await call(root, 'getjailsettings', { switches: '-r', prop: 'release' })).getjailsettings as Record<string, Record<string, string>>;
  assert.deepEqual(
    Object.values(releases)
      .map((r) => r.TAG)
      .sort(),
    ['13.3-RELEASE', '14.1-RELEASE'],
  );
  assert.ok(Object.values(releases).every((r) => r.release === r.TAG));

  const missing = expectError(await root.call('jail', 'getjailsettings', { jail: 'nosuch' }), 404);
  assert.equal(missing.errors?.[0]?.field, 'jail');
  assert.equal(expectError(await root.call('jail', 'getjailsettings', { jail: 'db01', prop: 'colour' }), 404).errors?.[0]?.field, 'prop');
  expectError(await root.call('jail', 'getjailsettings', { prop: 'boot' }), 400);
});

test('the state rules: progress messages, INFO when already so, destroy refused while running and changing nothing', async (t) => {
  const root = await clientFor(t, await agentFor(t), 'root');
  const created = (await call(root, 'createjail', { props: 'tag=web2 release=14.1-RELEASE ip4_addr=em0|10.0.0.7/24' })).createjail as {
    props: string;
    switches: string;
    success: Record<string, string>;
  };
  assert.equal(created.props, 'tag=web2 release=14.1-RELEASE ip4_addr=em0|10.0.0.7/24');
  assert.equal(created.switches, '');
  const uuid = await uuidOf(root, 'web2');
  assert.deepEqual(created.success, { 'Successfully created': ` ${uuid} (web2)` });
  assert.deepEqual((await list(root))[uuid], { boot: 'off', ip4: '10.0.0.7', jid: '-', state: 'down', tag: 'web2', type: 'thickjail' });

  assert.deepEqual(await call(root, 'startjail', { jail: 'web2' }), {
    startjail: { web2: { [`* Starting ${uuid} (web2)`]: '', '+ Started (shared IP mode) OK': '', '+ Starting services OK': '' } },
  });
  assert.equal((await list(root))[uuid]?.state, 'up');
  assert.deepEqual(await call(root, 'startjail', { jail: uuid }), { startjail: { [uuid]: { INFO: ` ${uuid} (web2) is already up` } } });

  const refused = expectError(await root.call('jail', 'destroyjail', { jail: 'web2' }), 409);
  assert.equal(refused.errors?.[0]?.field, 'jail');
  assert.equal((await list(root))[uuid]?.state, 'up', 'a refused destroy changes nothing');

  assert.deepEqual(await call(root, 'execjail', { jail: 'web2', user: 'www', command: ['id'] }), {
    execjail: { success: { 'uid=80(www) gid=80(www) groups=80(www)': '' } },
  });
  assert.deepEqual(await call(root, 'execjail', { jail: 'web2', user: 'root', command: 'hostname' }), { execjail: { success: { web2: '' } } });
  assert.deepEqual(await call(root, 'capjail', { jail: 'web2' }), { capjail: { success: 'jail web2 capped.' } });

  const stopped = (await call(root, 'stopjail', { jail: 'web2' })).stopjail as Record<string, Record<string, string>>;
  assert.deepEqual(Object.keys(stopped.web2 ?? {}), [
    `* Stopping ${uuid} (web2)`,
    '+ Running pre-stop OK',
    '+ Stopping services OK',
    '+ Removing jail process OK',
    '+ Running post-stop OK',
  ]);
  assert.deepEqual(await call(root, 'stopjail', { jail: 'web2' }), { stopjail: { web2: { INFO: ` ${uuid} (web2) is already down` } } });
  expectError(await root.call('jail', 'execjail', { jail: 'web2', user: 'root', command: 'id' }), 409);
  expectError(await root.call('jail', 'capjail', { jail: 'web2' }), 409);

  assert.deepEqual(await call(root, 'destroyjail', { jail: 'web2' }), { destroyjail: { success: { Destroyed: ` ${uuid} (web2)` } } });
  assert.equal((await list(root))[uuid], undefined);
  expectError(await root.call('jail', 'startjail', { jail: 'web2' }), 404);
});

test('-e gives {uuid}; clone copies with the differing props; bad input is refused naming the field with nothing made', async (t) => {
  const root = await clientFor(t, await agentFor(t), 'root');
  const empty = (await call(root, 'createjail', { props: 'tag=scratch', switches: '-e' })).createjail as { switches: string; success: { uuid: string } };
  assert.equal(empty.switches, '-e');
  assert.deepEqual(Object.keys(empty.success), ['uuid']);
  assert.equal((await list(root))[empty.success.uuid]?.tag, 'scratch');

  const clone = (await call(root, 'clonejail', { jail: 'db01', props: 'tag=db02 boot=on' })).clonejail as {
    jail: string;
    props: string;
    success: Record<string, string>;
  };
  assert.equal(clone.jail, 'db01');
  assert.equal(clone.props, 'tag=db02 boot=on');
  const db02 = await uuidOf(root, 'db02');
  assert.deepEqual(clone.success, { 'Successfully cloned': ` ${DB} -> ${db02} (db02)` });
  assert.deepEqual(await call(root, 'getjailsettings', { jail: 'db02', prop: 'memoryuse' }), { getjailsettings: { db02: { memoryuse: '2G:deny' } } });
  assert.equal(((await call(root, 'clonejail', { jail: 'db01' })).clonejail as { props: string }).props, '');

  const before = await list(root);
  const refusals: Array<[string, Record<string, unknown>, number, string]> = [
    ['createjail', { props: 'tag=x release=9.9-RELEASE' }, 404, 'props'],
    ['createjail', { props: 'tag=x' }, 400, 'props'],
    ['createjail', { props: 'tag=db01 release=14.1-RELEASE' }, 409, 'props'],
    ['createjail', { props: 'tag=x release=14.1-RELEASE colour=red' }, 400, 'props'],
    ['createjail', { props: 'tag=x release=14.1-RELEASE used=1G' }, 400, 'props'],
    ['createjail', { props: 'tag=-x release=14.1-RELEASE' }, 400, 'props'],
    ['createjail', { props: 'tag=a;b release=14.1-RELEASE' }, 400, 'props'],
    ['createjail', { props: 'tag=x', switches: '-z' }, 400, 'switches'],
    ['clonejail', { jail: 'nosuch' }, 404, 'jail'],
    ['startjail', { jail: '-f' }, 400, 'jail'],
    ['startjail', { jail: 'a/b' }, 400, 'jail'],
    ['startjail', { jail: 'a..b' }, 400, 'jail'],
    ['execjail', { jail: 'www01', user: 'root', command: [] }, 400, 'command'],
    ['execjail', { jail: 'www01', user: 'root', command: '-rf' }, 400, 'command'],
    ['execjail', { jail: 'www01', user: 'root', command: 'id\n' }, 400, 'command'],
    ['execjail', { jail: 'www01', user: 'nobody2', command: 'id' }, 404, 'user'],
    ['activatepool', { pool: 'nosuch' }, 404, 'pool'],
  ];
  for (const [action, args, code, field] of refusals) {
    const err = expectError(await root.call('jail', action, args), code);
    assert.ok(
      err.errors?.some((e) => e.field === field),
      `${action} ${JSON.stringify(args)} names ${field}: ${JSON.stringify(err)}`,
    );
  }
  assert.deepEqual(await list(root), before, 'nothing was made or changed');
});

test('execjail splits a string at runs of spaces, takes an array as given, and refuses limited users', async (t) => {
  const agent = await agentFor(t);
  const root = await clientFor(t, agent, 'root');
  assert.deepEqual(await call(root, 'execjail', { jail: 'www01', user: 'root', command: 'echo  a   b;c' }), { execjail: { success: { 'a b;c': '' } } });
  assert.deepEqual(await call(root, 'execjail', { jail: 'www01', user: 'root', command: ['echo', 'x: y'] }), { execjail: { success: { x: ' y' } } });
  const operator = await clientFor(t, agent, 'operator');
  assert.ok((await list(operator))[WWW]);
  for (const action of ['cleanjails', 'cleanreleases', 'cleantemplates', 'cleanall']) expectError(await operator.call('jail', action), 403);
  expectError(await operator.call('jail', 'execjail', { jail: 'www01', user: 'root', command: 'id' }), 403);
  expectError(await operator.call('jail', 'startjail', { jail: 'db01' }), 403);
});

test('clean destroys only what hostadm made, refuses while it runs; pools switch; everything survives a restart', async (t) => {
  let agent = await startTestAgent();
  t.after(() => agent.dispose());
  let root = await clientFor(t, agent, 'root');
  await call(root, 'createjail', { props: 'tag=tpl release=14.1-RELEASE template=yes' });
  await call(root, 'createjail', { props: 'tag=app release=13.3-RELEASE' });
  assert.equal((await list(root))[await uuidOf(root, 'tpl')]?.type, 'template');
  expectError(await root.call('jail', 'startjail', { jail: 'tpl' }), 409);
  await call(root, 'startjail', { jail: 'app' });

  agent = await agent.restart();
  t.after(() => agent.dispose());
  root = await clientFor(t, agent, 'root');
  assert.equal((await list(root))[await uuidOf(root, 'app')]?.state, 'up', 'state persisted');
  expectError(await root.call('jail', 'cleanjails'), 409);
  assert.ok(await uuidOf(root, 'app'), 'a refused clean removes nothing');
  await call(root, 'stopjail', { jail: 'app' });
  assert.deepEqual(await call(root, 'cleantemplates'), { cleantemplates: { success: 'All templates have been cleaned.' } });
  assert.deepEqual(
    Object.values(await list(root))
      .map((j) => j.tag)
      .sort(),
    ['app', 'db01', 'www01'],
  );
  assert.deepEqual(await call(root, 'cleanjails'), { cleanjails: { success: 'All jails have been cleaned.' } });
  assert.deepEqual(
    Object.values(await list(root))
      .map((j) => j.tag)
      .sort(),
    ['db01', 'www01'],
    'the host\u2019s own jails stay',
  );
  assert.deepEqual(await call(root, 'cleanall'), { cleanall: { success: 'All iocage datasets have been cleaned.' } });
  assert.deepEqual(await call(root, 'cleanreleases'), { cleanreleases: { success: 'All RELEASEs have been cleaned.' } });

  assert.deepEqual(await call(root, 'activatepool'), { activatepool: { 'currently active': { pool: ' zroot' } } });
  expectError(await root.call('jail', 'deactivatepool', { pool: 'zroot' }), 409);
  await call(root, 'stopjail', { jail: 'www01' });
  assert.deepEqual(await call(root, 'deactivatepool', { pool: 'zroot' }), { deactivatepool: { success: 'pool zroot deactivated.' } });
  assert.deepEqual(await list(root), {});
  assert.deepEqual(await call(root, 'activatepool', { pool: 'tank' }), { activatepool: { success: 'pool tank activated.' } });
  assert.deepEqual(await list(root), {});
  await call(root, 'activatepool', { pool: 'zroot' });
  assert.deepEqual(
    Object.values(await list(root))
      .map((j) => j.tag)
      .sort(),
    ['db01', 'www01'],
  );
});
