/**
 * `admin/update` on the simulated FreeBSD host, over a real WebSocket (and REST for the operator):
 * all 8 actions in the spec's shapes, an update as a queued job (acknowledgement, progress, the
 * completion event with `update_log`), its log listed and read, `rebootrequired` until the host
 * reboots, one update at a time, `stopupdate` changing nothing, bad input refused naming the field
 * with nothing changed, the operator's 403s, and everything persisted across a restart.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { classJobEvent } from '@hostadm/shared/api/dispatcher.ts';
import { agentFor, clientFor, rest, SIM_PASSWORD, startTestAgent, type TestClient } from '../helpers/agent.ts';
import { checkUntilAnswered, eventsOf, finishedEvent, runningEvent, startUpdate, upd, updError } from './update-support.ts';

const SUCCESS = { result: 'success' };

async function admin(t: Parameters<typeof agentFor>[0]): Promise<TestClient> {
  const client = await clientFor(t, await agentFor(t), 'admin');
  await client.request('events', 'subscribe', ['dispatcher']);
  return client;
}

test('checkupdates: a security patch, an OS upgrade and package updates; cached until forced', async (t) => {
  const client = await admin(t);
  const first = await checkUntilAnswered(client);
  assert.deepEqual(Object.keys(first).sort(), ['checkupdates', 'last_check']);
  assert.ok(!Number.isNaN(Date.parse(first.last_check)), first.last_check);
  const found = first.checkupdates;
  assert.equal(found.status, 'updatesavailable');
  assert.deepEqual(found.security, { name: '14.1-RELEASE-p6' });
  assert.deepEqual(found.majorupgrade, { name: 'FreeBSD 15.0-RELEASE', tag: '15.0-RELEASE', version: '15.0-RELEASE' });
  assert.deepEqual(found.packageupdate, { name: '3 package updates' });
  assert.match(found.details, /curl: 8\.9\.1 -> 8\.10\.1/);

  const cached = await checkUntilAnswered(client);
  assert.equal(cached.last_check, first.last_check, 'a fresh result is answered from the cache');
  const forced = await checkUntilAnswered(client, true);
  assert.ok(Date.parse(forced.last_check) >= Date.parse(first.last_check));
  assert.equal(forced.checkupdates.status, 'updatesavailable');
});

test('listbranches: the installed release active, newer ones available', async (t) => {
  const client = await admin(t);
  assert.deepEqual(await upd(client, 'listbranches'), {
    listbranches: { '14.1-RELEASE': 'active', '14.2-RELEASE': 'available', '14.3-RELEASE': 'available', '15.0-RELEASE': 'available' },
  });
});

test('listsettings and changesettings: merged, read back; bad values refused naming the field, nothing changed', async (t) => {
  const client = await admin(t);
  assert.deepEqual(await upd(client, 'listsettings'), { listsettings: { maxbe: '5', auto_update: 'disabled' } });
  assert.deepEqual(await upd(client, 'changesettings', { maxbe: 3, package_set: 'STABLE' }), { changesettings: SUCCESS });
  assert.deepEqual(await upd(client, 'listsettings'), { listsettings: { maxbe: '3', auto_update: 'disabled', package_set: 'STABLE' } });
  for (const [args, field] of [
    [{ maxbe: 0 }, 'maxbe'],
    [{ maxbe: '1001' }, 'maxbe'],
    [{ maxbe: 'five', package_set: 'EDGE' }, 'maxbe'],
    [{ package_set: '-rf' }, 'package_set'],
    [{ package_url: 'javascript:alert(1)' }, 'package_url'],
    [{ auto_update: 'all; reboot' }, 'auto_update'],
    [{ colour: 'blue' }, 'colour'],
  ] as const) {
    const err = await updError(client, 'changesettings', args, 400);
    assert.ok(err.errors?.some((e) => e.field === field) || err.message.includes(field), `${JSON.stringify(args)}: ${JSON.stringify(err)}`);
  }
  const none = await updError(client, 'changesettings', {}, 400);
  assert.match(none.message, /at least one setting/);
  assert.deepEqual(await upd(client, 'listsettings'), { listsettings: { maxbe: '3', auto_update: 'disabled', package_set: 'STABLE' } });
});

test('startupdate pkgupdate: acknowledged, progress and update_log while running, the whole log at the end, then listed and read', async (t) => {
  const client = await admin(t);
  const ack = await startUpdate(client, { target: 'pkgupdate' });
  assert.match(ack.command, /^bectl create update-\d{8}T\d{6}; pkg upgrade -y$/);
  const done = await finishedEvent(client, ack.queueid);
  assert.ok(classJobEvent().safeParse(done).success, JSON.stringify(done));
  assert.equal(done.event_system, 'admin/update');
  assert.equal(done.success, 'true');
  assert.equal(done.percent_done, '100%');
  assert.match(String(done.update_log), /Created boot environment update-\d{8}T\d{6}\n/);
  assert.match(String(done.update_log), /\[3\/3\] Upgrading sudo from 1\.9\.15p5 to 1\.9\.16\.\.\. done/);
  const running = eventsOf(client, ack.queueid).filter((e) => e.state === 'running');
  assert.ok(
    running.some((e) => typeof e.update_log === 'string' && e.update_log !== ''),
    'output reached the subscriber while running',
  );
  const streamed = running.map((e) => e.update_log).join('');
  assert.ok(String(done.update_log).startsWith(streamed), 'running events carry each new piece once, in order');

  const logs = (await upd(client, 'listlogs')).listlogs as Record<string, { name: string; started: string; finished: string }>;
  const names = Object.keys(logs);
  assert.equal(names.length, 1);
  const name = names[0] as string;
  assert.match(name, /^update-\d{8}T\d{6}Z-pkgupdate\.log$/);
  assert.equal(logs[name]?.name, name);
  assert.match(logs[name]?.started ?? '', /^\d+$/);
  assert.ok(Number(logs[name]?.finished) >= Number(logs[name]?.started));
  const text = ((await upd(client, 'readlogs', { logs: name })).readlogs as Record<string, string>)[name] ?? '';
  assert.match(text, /^Updating installed packages, started /);
  assert.ok(text.includes(String(done.update_log)), 'the log file holds what the event carried');
  assert.match(text, /Update finished, /);

  const after = await checkUntilAnswered(client);
  assert.equal(after.checkupdates.packageupdate, undefined, 'the packages are current now');
  assert.equal(after.checkupdates.status, 'updatesavailable', 'the security patch is still there');
});

test('standalone: the security patch installs, rebootrequired until the host reboots, then gone', async (t) => {
  const client = await admin(t);
  await checkUntilAnswered(client);
  const ack = await startUpdate(client, { target: 'standalone', tag: '14.1-RELEASE-p6' });
  assert.equal((await finishedEvent(client, ack.queueid)).success, 'true');
  const waiting = await checkUntilAnswered(client);
  assert.equal(waiting.checkupdates.status, 'rebootrequired');
  assert.match(waiting.checkupdates.details, /14\.1-RELEASE-p6/);
  assert.equal((await client.call('systemmanager', 'reboot')).name, 'response');
  const after = await checkUntilAnswered(client);
  assert.equal(after.checkupdates.status, 'updatesavailable');
  assert.equal(after.checkupdates.security, undefined);
});

test('bad targets are refused naming the field, and nothing is queued', async (t) => {
  const client = await admin(t);
  for (const [args, field] of [
    [{}, 'target'],
    [{ target: 'everything' }, 'target'],
    [{ target: 'chbranch' }, 'branch'],
    [{ target: 'chbranch', branch: '99.0-RELEASE' }, 'branch'],
    [{ target: 'chbranch', branch: '14.1-RELEASE' }, 'branch'],
    [{ target: 'chbranch', branch: '-r 15.0' }, 'branch'],
    [{ target: 'standalone' }, 'tag'],
    [{ target: 'standalone', tag: 'FreeBSD-SA-99:01.none' }, 'tag'],
    [{ target: 'pkgupdate', tag: 'x' }, 'tag'],
  ] as const) {
    const err = await updError(client, 'startupdate', args, 400);
    assert.ok(err.errors?.some((e) => e.field === field) || err.message.includes(field), `${JSON.stringify(args)}: ${JSON.stringify(err)}`);
  }
  const err = await updError(client, 'readlogs', { logs: ['../../etc/passwd'] }, 400);
  assert.ok(
    err.errors?.some((e) => e.field.startsWith('logs')),
    JSON.stringify(err),
  );
  await updError(client, 'readlogs', { logs: ['update-20200101T000000Z-pkgupdate.log'] }, 400);
  const jobs = (await client.request('rpc', 'dispatcher', { action: 'list' })).args as { jobs: Record<string, Record<string, unknown>> };
  assert.deepEqual(jobs.jobs.no_queue, {});
  assert.deepEqual((await upd(client, 'listlogs')).listlogs, {});
});

test('one update at a time; stopupdate ends a branch switch midway and changes nothing; with nothing running it is a 409', async (t) => {
  const client = await admin(t);
  const ack = await startUpdate(client, { target: 'chbranch', branch: '15.0-RELEASE' });
  assert.match(ack.command, /freebsd-update --not-running-from-cron -r 15\.0-RELEASE upgrade/);
  await runningEvent(client, ack.queueid);
  const busy = await updError(client, 'startupdate', { target: 'pkgupdate' }, 409);
  assert.match(busy.message, /already queued or running/);
  assert.equal((await checkUntilAnswered(client)).checkupdates.status, 'updaterunning');

  assert.deepEqual(await upd(client, 'stopupdate'), { stopupdate: SUCCESS });
  const done = await finishedEvent(client, ack.queueid);
  assert.equal(done.success, 'false');
  assert.match(String(done.reason), /killed by admin/);
  assert.equal(((await upd(client, 'listbranches')).listbranches as Record<string, string>)['14.1-RELEASE'], 'active');
  assert.notEqual((await checkUntilAnswered(client)).checkupdates.status, 'rebootrequired');
  const [name] = Object.keys((await upd(client, 'listlogs')).listlogs as object);
  const text = ((await upd(client, 'readlogs', { logs: [name] })).readlogs as Record<string, string>)[name as string];
  assert.match(text ?? '', /Update stopped, /);
  await updError(client, 'stopupdate', {}, 409);
});

test('maxbe: boot environments the updates made past maxbe are destroyed, oldest first', async (t) => {
  const client = await admin(t);
  await upd(client, 'changesettings', { maxbe: 1 });
  const first = await startUpdate(client, { target: 'pkgupdate' });
  const one = await finishedEvent(client, first.queueid);
  assert.doesNotMatch(String(one.update_log), /Destroyed/);
  const second = await startUpdate(client, { target: 'pkgupdate' });
  const two = await finishedEvent(client, second.queueid);
  assert.match(String(two.update_log), /Your packages are up to date\./);
  assert.match(String(two.update_log), /Destroyed boot environment\(s\) past maxbe 1: update-\d{8}T\d{6}\n/);
});

test('an operator reads (WebSocket and REST) but cannot change settings, start or stop updates (403); nothing changes', async (t) => {
  const agent = await agentFor(t);
  const operator = await clientFor(t, agent, 'operator');
  assert.equal((await checkUntilAnswered(operator)).checkupdates.status, 'updatesavailable');
  await upd(operator, 'listbranches');
  await upd(operator, 'listlogs');
  await updError(operator, 'changesettings', { maxbe: 2 }, 403);
  await updError(operator, 'startupdate', { target: 'pkgupdate' }, 403);
  await updError(operator, 'stopupdate', {}, 403);
  const viaRest = await rest(agent, '/admin/update', { action: 'listsettings' }, { basic: ['operator', SIM_PASSWORD] });
  assert.equal(viaRest.status, 200);
  assert.deepEqual(viaRest.body.args, { listsettings: { maxbe: '5', auto_update: 'disabled' } });
  const refused = await rest(agent, '/admin/update', { action: 'startupdate', target: 'pkgupdate' }, { basic: ['operator', SIM_PASSWORD] });
  assert.equal(refused.status, 403);
  assert.deepEqual((await upd(operator, 'listlogs')).listlogs, {});
});

test('settings, the last check, logs and the updated state survive a restart', async (t) => {
  let agent = await startTestAgent();
  t.after(() => agent.dispose());
  let client = await clientFor(t, agent, 'admin');
  await client.request('events', 'subscribe', ['dispatcher']);
  await upd(client, 'changesettings', { maxbe: 7 });
  const ack = await startUpdate(client, { target: 'pkgupdate' });
  await finishedEvent(client, ack.queueid);
  const check = await checkUntilAnswered(client);
  const logs = (await upd(client, 'listlogs')).listlogs;
  client.close();
  agent = await agent.restart();
  client = await clientFor(t, agent, 'admin');
  assert.deepEqual(await upd(client, 'listsettings'), { listsettings: { maxbe: '7', auto_update: 'disabled' } });
  assert.deepEqual(await upd(client, 'listlogs'), { listlogs: logs });
  assert.deepEqual(await checkUntilAnswered(client), check);
});
