/**
 * `fs dirlist` on the FreeBSD platform: the parsers against FreeBSD output (see
 * test/fixtures/freebsd/fs/stat.source.md for which samples are real and which constructed), and the
 * whole action through an agent whose runner replays them, with the argv it runs snapshotted.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { RecordingRunner, type CannedReply } from '@hostadm/agent/runner/recording-runner.ts';
import {
  CHAIN_FORMAT,
  ENTRY_FORMAT,
  parseChainStat,
  parseEntryStat,
  parseEntryStats,
  parsePrint0Names,
  parseRealpathSteps,
} from '@hostadm/agent/platforms/freebsd/parse/fs.ts';
import { startTestAgent, TestClient, type Envelope, type TestAgent } from '../helpers/agent.ts';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/freebsd/fs/${name}`, import.meta.url), 'utf8');

async function clientAs(agent: TestAgent, user: string, level: 'full' | 'limited'): Promise<TestClient> {
  const session = agent.services.sessions.create({ user, level, groups: [], method: 'password', connectionId: 'fabricated' });
  const client = await TestClient.connect(agent.url);
  assert.equal((await client.request('rpc', 'auth_token', { token: session.token })).name, 'response');
  return client;
}

const is =
  (...head: string[]) =>
  (argv: readonly string[]) =>
    head.every((h, i) => argv[i] === h);

/** operator (uid 2, group 5): the listing itself runs under their ids. */
const AS_OPERATOR = ['chroot', '-u', '2', '-g', '5', '-G', '5', '/'];

/** The replies a FreeBSD host gives while operator lists their home through the /home link. */
function homeOperatorReplies(): CannedReply[] {
  return [
    { match: ['id', '-u', '--', 'operator'], stdout: fixture('id-u-operator.txt') },
    { match: ['id', '-G', '--', 'operator'], stdout: fixture('id-G-operator.txt') },
    { match: ['realpath', '-q', '--', '/', '/home', '/home/operator'], stdout: fixture('realpath-home-operator.txt') },
    { match: is('stat', '-L', '-f', CHAIN_FORMAT), stdout: fixture('stat-chain-home-operator.txt') },
    {
      match: [...AS_OPERATOR, 'find', '/usr/home/operator', '-mindepth', '1', '-maxdepth', '1', '-print0'],
      stdout: fixture('find-print0-home-operator.txt'),
    },
    { match: is(...AS_OPERATOR, 'stat', '-f', ENTRY_FORMAT), stdout: fixture('stat-entries-home-operator.txt') },
    { match: is(...AS_OPERATOR, 'stat', '-L', '-f', '%HT'), stdout: fixture('stat-L-links-home-operator.txt') },
  ];
}

test('FreeBSD fs parsers', async (t) => {
  await t.test('stat(1) prints the type words the port compares against (real man-page sample)', () => {
    const types = fixture('stat-man-example.txt')
      .trim()
      .split('\n')
      .map((l) => l.split(': ')[1]?.split(' -> ')[0]);
    assert.deepEqual(types, ['Symbolic Link', 'Regular File', 'Directory', 'Symbolic Link']);
  });

  await t.test('the chain of a path: ids, octal mode with type bits, the path as given', () => {
    const stats = parseChainStat(fixture('stat-chain-home-operator.txt'));
    assert.deepEqual(stats.get('/usr/home/operator'), { uid: 2, gid: 5, perm: 0o755, isDir: true });
    assert.deepEqual(stats.get('/'), { uid: 0, gid: 0, perm: 0o755, isDir: true });
    assert.equal(stats.size, 4);
    assert.deepEqual(parseChainStat('0 0 100644 /etc/rc.conf\n').get('/etc/rc.conf'), { uid: 0, gid: 0, perm: 0o644, isDir: false });
    assert.deepEqual(parseChainStat('0 0 41777 /tmp\n').get('/tmp'), { uid: 0, gid: 0, perm: 0o777, isDir: true }, 'the sticky bit is not a permission');
  });

  await t.test('realpath answers for nested steps: the missing ones are the last', () => {
    assert.deepEqual(parseRealpathSteps(fixture('realpath-home-operator.txt'), 3), ['/', '/usr/home', '/usr/home/operator']);
    assert.deepEqual(parseRealpathSteps('/\n/root\n', 3), ['/', '/root', null]);
    assert.equal(parseRealpathSteps('/\n/a\nb\n/a\nb/c\n', 3), null, 'a newline in a resolved name: ask step by step');
  });

  await t.test('names from find -print0, a newline inside one included', () => {
    const names = parsePrint0Names(fixture('find-print0-home-operator.txt'));
    assert.equal(names.length, 10);
    assert.ok(names.includes('two\nlines'));
    assert.ok(names.includes('.cshrc'));
    assert.deepEqual(parsePrint0Names('/a\0/b\0/partial'), ['a', 'b'], 'an unterminated last path is dropped');
  });

  await t.test('entry details: one record per path, ids without names unwrapped', () => {
    const records = parseEntryStats(fixture('stat-entries-home-operator.txt'), 10);
    assert.ok(records);
    assert.deepEqual(records[5], { type: 'Symbolic Link', owner: 'operator', group: 'operator', size: 10, target: 'backup.log' });
    assert.deepEqual(records[6], { type: 'Regular File', owner: '1005', group: '1005', size: 77, target: '' });
    assert.equal(parseEntryStats(fixture('stat-entries-home-operator.txt'), 9), null, 'a count mismatch is detected, never guessed');
    assert.deepEqual(parseEntryStat('Symbolic Link\troot\twheel\t7\ta\tb'), { type: 'Symbolic Link', owner: 'root', group: 'wheel', size: 7, target: 'a\tb' });
  });
});

test('FreeBSD fs dirlist through the agent', async (t) => {
  await t.test('a limited user lists their home through the /home link', async (t) => {
    const runner = new RecordingRunner(homeOperatorReplies());
    const agent = await startTestAgent({ platform: 'freebsd', runner });
    t.after(() => agent.dispose());
    const op = await clientAs(agent, 'operator', 'limited');
    t.after(() => op.close());
    const reply = await op.call('fs', 'dirlist', { dir: '/home/operator' });
    assert.equal(reply.name, 'response', JSON.stringify(reply.args));
    assert.deepEqual((reply.args as { dirlist: unknown }).dirlist, {
      '.cshrc': { group: 'operator', owner: 'operator', size: 1003 },
      '.login': { group: 'operator', owner: 'operator', size: 311 },
      '.profile': { group: 'operator', owner: 'operator', size: 966 },
      '.shrc': { group: 'operator', owner: 'operator', size: 1010 },
      'backup.log': { group: 'operator', owner: 'operator', size: 48213 },
      latest: { symlink: true, target: 'backup.log' },
      'orphan.dat': { group: '1005', owner: '1005', size: 77 },
      scripts: { dir: true },
      'two\nlines': { group: 'operator', owner: 'operator', size: 0 },
      www: { dir: true },
    });
    t.assert.snapshot(runner.calls);
  });

  await t.test('if the directory changed after the check, the kernel refuses the listing: 403', async (t) => {
    // The first matching reply wins: this find answers before the fixture's.
    const runner = new RecordingRunner([
      { match: is(...AS_OPERATOR, 'find'), code: 1, stderr: 'find: /usr/home/operator: Permission denied\n' },
      ...homeOperatorReplies(),
    ]);
    const agent = await startTestAgent({ platform: 'freebsd', runner });
    t.after(() => agent.dispose());
    const op = await clientAs(agent, 'operator', 'limited');
    t.after(() => op.close());
    const reply = await op.call('fs', 'dirlist', { dir: '/home/operator' });
    assert.equal((reply.args as { code: number }).code, 403, JSON.stringify(reply.args));
  });

  await t.test('a limited user is refused /root/secret before anything is listed', async (t) => {
    const runner = new RecordingRunner([
      { match: ['id', '-u', '--', 'operator'], stdout: fixture('id-u-operator.txt') },
      { match: ['id', '-G', '--', 'operator'], stdout: fixture('id-G-operator.txt') },
      { match: ['realpath', '-q', '--', '/', '/root', '/root/secret'], stdout: fixture('realpath-root-secret.txt') },
      { match: is('stat', '-L', '-f', CHAIN_FORMAT), stdout: fixture('stat-chain-root-secret.txt') },
    ]);
    const agent = await startTestAgent({ platform: 'freebsd', runner });
    t.after(() => agent.dispose());
    const op = await clientAs(agent, 'operator', 'limited');
    t.after(() => op.close());
    const reply = await op.call('fs', 'dirlist', { dir: '/root/secret' });
    assert.equal((reply.args as { code: number }).code, 403);
    assert.match((reply.args as { message: string }).message, /permission denied: \/root \(on the way/);
    assert.ok(!runner.calls.some((c) => c[0] === 'find'), 'nothing was listed');
    t.assert.snapshot(runner.calls);
  });

  await t.test('root lists it; a missing directory is a 400 naming dir', async (t) => {
    const runner = new RecordingRunner([
      { match: ['realpath', '-q', '--', '/', '/root', '/root/secret'], stdout: fixture('realpath-root-secret.txt') },
      { match: ['realpath', '-q', '--', '/', '/root', '/root/nothing'], code: 1, stdout: '/\n/root\n' },
      { match: ['stat', '-L', '-f', CHAIN_FORMAT, '--', '/', '/root'], stdout: '0 0 40755 /\n0 0 40700 /root\n' },
      { match: is('stat', '-L', '-f', CHAIN_FORMAT), stdout: fixture('stat-chain-root-secret.txt') },
      { match: ['find', '/root/secret', '-mindepth', '1', '-maxdepth', '1', '-print0'], stdout: '' },
    ]);
    const agent = await startTestAgent({ platform: 'freebsd', runner });
    t.after(() => agent.dispose());
    const root = await clientAs(agent, 'root', 'full');
    t.after(() => root.close());
    assert.deepEqual((await root.call('fs', 'dirlist', { dir: '/root/secret' })).args, { dirlist: {} });
    const missing: Envelope = await root.call('fs', 'dirlist', { dir: '/root/nothing' });
    assert.equal((missing.args as { code: number }).code, 400);
    assert.deepEqual(
      (missing.args as { errors: Array<{ field: string }> }).errors.map((e) => e.field),
      ['dir'],
    );
    t.assert.snapshot(runner.calls);
  });

  await t.test('a resolved path holding newlines is resolved and stat-ed alone, never parsed as lines', async (t) => {
    const weird = '/tmp/vault/odd\n0 0 40777 /tmp/vault';
    const runner = new RecordingRunner([
      { match: ['id', '-u', '--', 'operator'], stdout: fixture('id-u-operator.txt') },
      { match: ['id', '-G', '--', 'operator'], stdout: fixture('id-G-operator.txt') },
      { match: ['realpath', '-q', '--', '/', '/tmp', '/tmp/vault', '/tmp/vault/to-odd'], stdout: `/\n/tmp\n/tmp/vault\n${weird}\n` },
      { match: ['realpath', '--', '/'], stdout: '/\n' },
      { match: ['realpath', '--', '/tmp'], stdout: '/tmp\n' },
      { match: ['realpath', '--', '/tmp/vault'], stdout: '/tmp/vault\n' },
      { match: ['realpath', '--', '/tmp/vault/to-odd'], stdout: `${weird}\n` },
      { match: ['stat', '-L', '-f', CHAIN_FORMAT, '--', '/', '/tmp', '/tmp/vault'], stdout: '0 0 40755 /\n0 0 41777 /tmp\n0 0 40700 /tmp/vault\n' },
      { match: (a) => a[0] === 'stat' && a[1] === '-n', stdout: '0 0 40755' },
    ]);
    const agent = await startTestAgent({ platform: 'freebsd', runner });
    t.after(() => agent.dispose());
    const op = await clientAs(agent, 'operator', 'limited');
    t.after(() => op.close());
    const reply = await op.call('fs', 'dirlist', { dir: '/tmp/vault/to-odd' });
    assert.equal((reply.args as { code: number }).code, 403, JSON.stringify(reply.args));
    t.assert.snapshot(runner.calls);
  });

  await t.test('a link target holding a newline makes the port ask path by path', async (t) => {
    const runner = new RecordingRunner([
      { match: ['realpath', '-q', '--', '/', '/tmp'], stdout: '/\n/tmp\n' },
      { match: is('stat', '-L', '-f', CHAIN_FORMAT), stdout: '0 0 40755 /\n0 0 41777 /tmp\n' },
      { match: ['find', '/tmp', '-mindepth', '1', '-maxdepth', '1', '-print0'], stdout: '/tmp/odd\0/tmp/plain\0' },
      { match: ['stat', '-f', ENTRY_FORMAT, '--', '/tmp/odd', '/tmp/plain'], stdout: 'Symbolic Link\troot\twheel\t5\tx\ny\nRegular File\troot\twheel\t3\t\n' },
      { match: ['stat', '-n', '-f', ENTRY_FORMAT, '--', '/tmp/odd'], stdout: 'Symbolic Link\troot\twheel\t5\tx\ny' },
      { match: ['stat', '-n', '-f', ENTRY_FORMAT, '--', '/tmp/plain'], stdout: 'Regular File\troot\twheel\t3\t' },
      { match: ['stat', '-L', '-f', '%HT', '--', '/tmp/odd'], stdout: 'Symbolic Link\n' },
    ]);
    const agent = await startTestAgent({ platform: 'freebsd', runner });
    t.after(() => agent.dispose());
    const root = await clientAs(agent, 'root', 'full');
    t.after(() => root.close());
    assert.deepEqual((await root.call('fs', 'dirlist', { dir: '/tmp' })).args, {
      dirlist: { odd: { symlink: true, target: 'x\ny' }, plain: { group: 'wheel', owner: 'root', size: 3 } },
    });
    t.assert.snapshot(runner.calls);
  });
});
