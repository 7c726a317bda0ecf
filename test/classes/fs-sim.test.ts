/**
 * `fs dirlist` on the simulated FreeBSD host, through a real agent over WebSocket (and REST once):
 * shapes, hidden entries, links, the caller's own permissions (the original's bug: anyone listed
 * anything as root), 400s naming `dir`, the entry cap, and the tree persisting across restarts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { rest, SIM_PASSWORD, startTestAgent, TestClient, type Envelope, type TestAgent } from '../helpers/agent.ts';

type Listing = Record<string, Record<string, unknown>>;

async function signedIn(agent: TestAgent, user: string): Promise<TestClient> {
  const client = await TestClient.connect(agent.url);
  await client.login(user);
  return client;
}

function listingOf(reply: Envelope): Listing {
  assert.equal(reply.name, 'response', JSON.stringify(reply.args));
  return (reply.args as { dirlist: Listing }).dirlist;
}

function errorOf(reply: Envelope): { code: number; message: string; errors?: Array<{ field: string; message: string }> } {
  assert.equal(reply.name, 'error', JSON.stringify(reply.args));
  return reply.args as { code: number; message: string; errors?: Array<{ field: string; message: string }> };
}

/** Edits the persisted sim tree with the agent stopped, then starts it again on the same data. */
async function editTree(agent: TestAgent, change: (root: SimDir) => void): Promise<TestAgent> {
  await agent.close();
  const path = join(agent.dataDir, 'sim', 'state.json');
  const doc = JSON.parse(readFileSync(path, 'utf8')) as { slices: { fs: { root: SimDir } } };
  change(doc.slices.fs.root);
  writeFileSync(path, JSON.stringify(doc));
  return agent.restart();
}
interface SimDir {
  children: Record<string, SimDir | Record<string, unknown>>;
}
const childDir = (d: SimDir, ...names: string[]) => names.reduce((at, n) => at.children[n] as SimDir, d);

test('fs dirlist on the sim host', async (t) => {
  let agent = await startTestAgent();
  t.after(() => agent.dispose());

  await t.test('the root directory: files with owner/group/size, directories, links, hidden entries', async () => {
    const admin = await signedIn(agent, 'admin');
    t.after(() => admin.close());
    const root = listingOf(await admin.call('fs', 'dirlist', { dir: '/' }));
    assert.deepEqual(root['COPYRIGHT'], { group: 'wheel', owner: 'root', size: 6109 });
    assert.deepEqual(root['.cshrc'], { group: 'wheel', owner: 'root', size: 1011 }, 'hidden entries are listed');
    assert.deepEqual(root['etc'], { dir: true });
    assert.deepEqual(root['home'], { dir: true }, 'a link to a directory is a directory');
    assert.deepEqual(root['sys'], { symlink: true, target: 'usr/src/sys' }, 'a dangling link shows its target');
    assert.equal(root['.'], undefined);
    assert.equal(root['..'], undefined);
    const etc = listingOf(await admin.call('fs', 'dirlist', { dir: '/etc' }));
    assert.deepEqual(etc['master.passwd'], { group: 'wheel', owner: 'root', size: 1837 });
    assert.equal(typeof (etc['rc.conf'] as { size: unknown }).size, 'number');
  });

  await t.test("a full-access user lists anything, including /root and other users' homes", async () => {
    const admin = await signedIn(agent, 'admin');
    t.after(() => admin.close());
    assert.ok(listingOf(await admin.call('fs', 'dirlist', { dir: '/root' }))['.history']);
    const home = listingOf(await admin.call('fs', 'dirlist', { dir: '/home/admin' }));
    assert.deepEqual(home['notes.txt'], { group: 'admin', owner: 'admin', size: 2209 });
    assert.deepEqual(home['.ssh'], { dir: true });
  });

  await t.test('a limited user lists only what their account may read', async () => {
    const op = await signedIn(agent, 'operator');
    t.after(() => op.close());
    const own = listingOf(await op.call('fs', 'dirlist', { dir: '/home/operator' }));
    assert.deepEqual(own['.profile'], { group: 'operator', owner: 'operator', size: 966 });
    assert.ok(listingOf(await op.call('fs', 'dirlist', { dir: '/home/operator/scripts' }))['rotate.sh'], 'their own 0750 directory');
    assert.ok(listingOf(await op.call('fs', 'dirlist', { dir: '/etc' }))['rc.conf']);
    assert.ok(listingOf(await op.call('fs', 'dirlist', { dir: '/usr/home' }))['admin'], 'the 0755 parent of a private home');

    for (const dir of ['/root', '/home/admin', '/usr/home/admin', '/home/admin/.ssh', '/usr/local/etc/hostadm', '/var/log/hostadm']) {
      const err = errorOf(await op.call('fs', 'dirlist', { dir }));
      assert.equal(err.code, 403, dir);
      assert.match(err.message, /permission denied/);
    }
    // Behind a directory the caller cannot search, existence is not revealed: 403, not 400.
    assert.equal(errorOf(await op.call('fs', 'dirlist', { dir: '/root/no-such-dir' })).code, 403);
    assert.equal(errorOf(await op.call('fs', 'dirlist', { dir: '/home/admin/.ssh/x' })).code, 403);
  });

  await t.test('REST answers the same refusal with HTTP 403', async () => {
    const res = await rest(agent, '/admin/fs', { action: 'dirlist', dir: '/root' }, { basic: ['operator', SIM_PASSWORD] });
    assert.equal(res.status, 403);
    const ok = await rest(agent, '/admin/fs', { action: 'dirlist', dir: '/tmp' }, { basic: ['operator', SIM_PASSWORD] });
    assert.equal(ok.status, 200);
    assert.deepEqual(ok.body.args, { dirlist: {} });
  });

  await t.test('bad directories are 400s naming dir, for every caller', async () => {
    for (const user of ['admin', 'operator']) {
      const client = await signedIn(agent, user);
      t.after(() => client.close());
      const cases: Array<[unknown, RegExp]> = [
        ['/no/such/place', /no such directory/],
        ['/etc/rc.conf', /not a directory/],
        ['/etc/rc.conf/x', /not a directory/],
        ['/sys', /no such directory/],
        ['etc', /absolute/],
        ['/usr/../root', /`\.\.`/],
        ['', /empty/],
        [42, /string/i],
      ];
      for (const [dir, message] of cases) {
        const err = errorOf(await client.call('fs', 'dirlist', { dir }));
        assert.equal(err.code, 400, `${user} ${String(dir)}`);
        assert.deepEqual([...new Set(err.errors?.map((e) => e.field))], ['dir'], `${user} ${String(dir)}`);
        assert.match(`${err.message} ${err.errors?.map((e) => e.message).join(' ')}`, message);
      }
      const missing = errorOf(await client.call('fs', 'dirlist', {}));
      assert.equal(missing.code, 400);
      assert.deepEqual(
        missing.errors?.map((e) => e.field),
        ['dir'],
      );
      const extra = errorOf(await client.call('fs', 'dirlist', { dir: '/', recursive: true }));
      assert.deepEqual(
        extra.errors?.map((e) => e.field),
        ['recursive'],
      );
    }
  });

  await t.test('the tree is persisted: changes to the state show after a restart, odd names included', async () => {
    agent = await editTree(agent, (root) => {
      const tmp = childDir(root, 'tmp');
      // defineProperty: a plain assignment to `__proto__` would set the prototype instead.
      Object.defineProperty(tmp.children, '__proto__', { value: { type: 'file', uid: 1001, gid: 1001, mode: 0o644, size: 7 }, enumerable: true });
      tmp.children['with space\nand newline'] = { type: 'file', uid: 65534, gid: 65534, mode: 0o644, size: 1 };
      tmp.children['orphan'] = { type: 'file', uid: 4242, gid: 4242, mode: 0o644, size: 0 };
    });
    const admin = await signedIn(agent, 'admin');
    t.after(() => admin.close());
    const tmp = listingOf(await admin.call('fs', 'dirlist', { dir: '/tmp' }));
    assert.ok(Object.hasOwn(tmp, '__proto__'), 'an entry named __proto__ is an entry');
    // biome-ignore lint/suspicious/noProto: a file named __proto__ must be an ordinary key, which is what this checks
    assert.deepEqual(tmp['__proto__'], { group: 'admin', owner: 'admin', size: 7 });
    assert.deepEqual(tmp['with space\nand newline'], { group: 'nobody', owner: 'nobody', size: 1 });
    assert.deepEqual(tmp['orphan'], { group: '4242', owner: '4242', size: 0 }, 'ids without a name stay numeric');
    const again = await agent.restart();
    agent = again;
    const admin2 = await signedIn(agent, 'admin');
    t.after(() => admin2.close());
    assert.deepEqual(listingOf(await admin2.call('fs', 'dirlist', { dir: '/tmp' })), tmp);
  });

  await t.test('a huge directory is cut to the first 10 000 entries by name', async () => {
    agent = await editTree(agent, (root) => {
      const big = childDir(root, 'var', 'tmp');
      for (let i = 0; i < 10_050; i++) big.children[`f${String(i).padStart(5, '0')}`] = { type: 'file', uid: 0, gid: 0, mode: 0o644, size: i };
    });
    const admin = await signedIn(agent, 'admin');
    t.after(() => admin.close());
    const names = Object.keys(listingOf(await admin.call('fs', 'dirlist', { dir: '/var/tmp' })));
    assert.equal(names.length, 10_000);
    assert.ok(names.includes('f00000') && names.includes('f09999'));
    assert.ok(!names.includes('f10000'), 'the last names by order are the ones left out');
  });
});
