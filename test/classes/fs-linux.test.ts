/**
 * `fs dirlist` on the REAL Linux platform, aimed into a sandbox (own mount namespace, private /etc
 * and /home): real find/stat/realpath/id, real owners and modes. The Linux platform has no password
 * sign-in yet, so sessions are made directly in the agent's session store and resumed over
 * WebSocket with `auth_token` (the path a real client takes after reconnecting).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, chownSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRunner, type CommandRunner } from '@hostadm/agent/runner/runner.ts';
import { HostadmError } from '@hostadm/shared/protocol/errors.ts';
import { startTestAgent, TestClient, type Envelope, type TestAgent } from '../helpers/agent.ts';
import { canSandbox, createLinuxSandbox, type LinuxSandbox } from '../helpers/linux-sandbox.ts';

const can = canSandbox();

async function clientAs(agent: TestAgent, user: string, level: 'full' | 'limited'): Promise<TestClient> {
  const session = agent.services.sessions.create({ user, level, groups: [], method: 'password', connectionId: 'fabricated' });
  const client = await TestClient.connect(agent.url);
  const reply = await client.request('rpc', 'auth_token', { token: session.token });
  assert.equal(reply.name, 'response', JSON.stringify(reply.args));
  return client;
}

const listing = (reply: Envelope) => {
  assert.equal(reply.name, 'response', JSON.stringify(reply.args));
  return (reply.args as { dirlist: Record<string, unknown> }).dirlist;
};
const code = (reply: Envelope) => {
  assert.equal(reply.name, 'error', JSON.stringify(reply.args));
  return (reply.args as { code: number }).code;
};

async function sh(sandbox: LinuxSandbox, ...argv: string[]): Promise<string> {
  const r = await sandbox.runner.run(argv);
  assert.equal(r.code, 0, `${argv.join(' ')}: ${r.stderr}`);
  return r.stdout.trim();
}

test('fs dirlist on the real Linux platform', { skip: can.ok ? false : can.reason }, async (t) => {
  const sandbox = await createLinuxSandbox();
  t.after(() => sandbox.dispose());
  await sh(sandbox, 'groupadd', 'staffgrp');
  await sh(sandbox, 'useradd', '-M', '-U', '-s', '/bin/sh', 'opuser');
  const uid = Number(await sh(sandbox, 'id', '-u', 'opuser'));
  const gid = Number(await sh(sandbox, 'id', '-g', 'opuser'));
  const staff = Number((await sh(sandbox, 'getent', 'group', 'staffgrp')).split(':')[2]);

  // The tree, built from the host side in the sandbox's /home (ownership by the sandbox's ids).
  const H = sandbox.home;
  chmodSync(H, 0o755);
  const mk = (rel: string, mode: number, owner = 0, group = 0) => {
    mkdirSync(join(H, rel));
    chownSync(join(H, rel), owner, group);
    chmodSync(join(H, rel), mode);
  };
  const put = (rel: string, body: string, mode = 0o644, owner = 0, group = 0) => {
    writeFileSync(join(H, rel), body);
    chownSync(join(H, rel), owner, group);
    chmodSync(join(H, rel), mode);
  };
  mk('tree', 0o755);
  mk('tree/public', 0o755);
  put('tree/public/a.txt', 'hello');
  put('tree/public/.hidden', 'secret\n', 0o600, uid, gid);
  put('tree/public/name with\nnewline\tand tab', 'x');
  put('tree/public/__proto__', 'p');
  mk('tree/public/sub', 0o700);
  symlinkSync('sub', join(H, 'tree/public/link-to-dir'));
  symlinkSync('/nonexistent/target', join(H, 'tree/public/dangling'));
  symlinkSync('a.txt', join(H, 'tree/public/link-to-file'));
  mk('tree/private', 0o700);
  put('tree/private/secret.txt', 's');
  mk('tree/staffonly', 0o750, 0, staff);
  mk('tree/mine', 0o700, uid, gid);
  mk('tree/noexec', 0o644);
  mk('tree/locked', 0o711);
  mk('tree/locked/inner', 0o755);
  mk('tree/closed', 0o700);
  mk('tree/closed/open', 0o755);
  symlinkSync('closed/open', join(H, 'tree/via'));
  put('tree/file.txt', 'f');
  // Inside a 0700 directory, a path holding newlines whose lines read like stat records claiming
  // that directory is 0777: a parser that split stat output on newlines would be fooled.
  mk('tree/vault', 0o700);
  mkdirSync(join(H, 'tree/vault/odd\n0 0 41ff /home/tree/vault'), { recursive: true });
  symlinkSync('odd\n0 0 41ff /home/tree/vault', join(H, 'tree/vault/to-odd'));
  mk('tree/big', 0o755);
  for (let i = 0; i < 10_010; i++) writeFileSync(join(H, 'tree/big', `n${String(i).padStart(5, '0')}`), '');

  const inside = createRunner({ prefix: sandbox.prefix });
  const calls: string[][] = [];
  const runner: CommandRunner = {
    run(argv, options) {
      calls.push([...argv]);
      return inside.run(argv, options);
    },
  };
  const agent = await startTestAgent({ platform: 'linux', runner });
  t.after(() => agent.dispose());
  const root = await clientAs(agent, 'root', 'full');
  t.after(() => root.close());
  const op = await clientAs(agent, 'opuser', 'limited');
  t.after(() => op.close());

  await t.test('entries as the sandbox sees them: owners by name, sizes as numbers, links, hidden files', async () => {
    const pub = listing(await root.call('fs', 'dirlist', { dir: '/home/tree/public' }));
    assert.deepEqual(pub['a.txt'], { group: 'root', owner: 'root', size: 5 });
    assert.deepEqual(pub['.hidden'], { group: 'opuser', owner: 'opuser', size: 7 });
    assert.deepEqual(pub['name with\nnewline\tand tab'], { group: 'root', owner: 'root', size: 1 });
    assert.ok(Object.hasOwn(pub, '__proto__'));
    assert.deepEqual(pub['sub'], { dir: true });
    assert.deepEqual(pub['link-to-dir'], { dir: true });
    assert.deepEqual(pub['dangling'], { symlink: true, target: '/nonexistent/target' });
    assert.deepEqual(pub['link-to-file'], { symlink: true, target: 'a.txt' });
    assert.equal(Object.keys(pub).length, 8);
  });

  await t.test('a full-access user lists a 0700 root directory; trailing slashes and links are fine', async () => {
    assert.deepEqual(listing(await root.call('fs', 'dirlist', { dir: '/home/tree/private' })), { 'secret.txt': { group: 'root', owner: 'root', size: 1 } });
    assert.ok(listing(await root.call('fs', 'dirlist', { dir: '/home/tree/public/' }))['a.txt']);
    assert.deepEqual(listing(await root.call('fs', 'dirlist', { dir: '/home/tree/via' })), {});
    assert.ok(listing(await root.call('fs', 'dirlist', { dir: '/etc' }))['passwd'], 'the sandbox /etc');
  });

  await t.test('a limited user is refused a 0700 root directory and allowed a 0755 one', async () => {
    assert.equal(code(await op.call('fs', 'dirlist', { dir: '/home/tree/private' })), 403);
    assert.ok(listing(await op.call('fs', 'dirlist', { dir: '/home/tree/public' }))['a.txt']);
    assert.ok(listing(await op.call('fs', 'dirlist', { dir: '/home/tree/mine' })), 'their own 0700 directory');
    assert.equal(code(await op.call('fs', 'dirlist', { dir: '/home/tree/noexec' })), 403, 'read without search is not enough');
    assert.equal(code(await op.call('fs', 'dirlist', { dir: '/home/tree/locked' })), 403, 'search without read is not enough');
    assert.deepEqual(listing(await op.call('fs', 'dirlist', { dir: '/home/tree/locked/inner' })), {}, 'search on the way is enough');
    assert.equal(code(await op.call('fs', 'dirlist', { dir: '/home/tree/closed/open' })), 403, 'an unsearchable ancestor');
    assert.equal(code(await op.call('fs', 'dirlist', { dir: '/home/tree/via' })), 403, 'a link through an unsearchable directory');
    assert.equal(code(await op.call('fs', 'dirlist', { dir: '/home/tree/private/nothing' })), 403, 'nothing revealed behind it');
    assert.equal(code(await op.call('fs', 'dirlist', { dir: '/root' })), 403);
    assert.equal(code(await op.call('fs', 'dirlist', { dir: '/home/tree/nothing' })), 400);
    assert.equal(code(await op.call('fs', 'dirlist', { dir: '/home/tree/file.txt' })), 400);
  });

  await t.test("a limited listing runs with the caller's own ids, so the kernel has the last word", async () => {
    calls.length = 0;
    assert.ok(listing(await op.call('fs', 'dirlist', { dir: '/home/tree/public' }))['a.txt']);
    const find = calls.find((c) => c.includes('find'));
    assert.deepEqual(find?.slice(0, 6), ['setpriv', `--reuid=${uid}`, `--regid=${gid}`, `--groups=${gid}`, '--', 'find']);
    calls.length = 0;
    await root.call('fs', 'dirlist', { dir: '/home/tree/public' });
    assert.equal(calls.find((c) => c.includes('find'))?.[0], 'find', 'full access lists as root');
    // The port alone, as if the directory had changed after the check: the kernel refuses.
    const port = agent.services.platform.ports.fs;
    assert.ok(port);
    const refused = (e: unknown) => e instanceof HostadmError && e.code === 'FORBIDDEN';
    await assert.rejects(port.list('/home/tree/private', 10, { uid, gids: [gid] }), refused);
    assert.equal((await port.list('/home/tree/private', 10, null)).total, 1);
  });

  await t.test('a resolved name that holds a newline cannot pass for another path', async () => {
    assert.equal(code(await op.call('fs', 'dirlist', { dir: '/home/tree/vault/to-odd' })), 403);
    assert.equal(code(await op.call('fs', 'dirlist', { dir: '/home/tree/vault' })), 403);
    assert.deepEqual(listing(await root.call('fs', 'dirlist', { dir: '/home/tree/vault/to-odd' })), {});
    assert.deepEqual(listing(await root.call('fs', 'dirlist', { dir: '/home/tree/vault' })), { 'odd\n0 0 41ff ': { dir: true }, 'to-odd': { dir: true } });
  });

  await t.test('group membership is read live from the host', async () => {
    assert.equal(code(await op.call('fs', 'dirlist', { dir: '/home/tree/staffonly' })), 403);
    await sh(sandbox, 'usermod', '-a', '-G', 'staffgrp', 'opuser');
    assert.deepEqual(listing(await op.call('fs', 'dirlist', { dir: '/home/tree/staffonly' })), {});
  });

  await t.test('an account missing on the host gets nothing', async () => {
    const ghost = await clientAs(agent, 'ghost', 'limited');
    t.after(() => ghost.close());
    assert.equal(code(await ghost.call('fs', 'dirlist', { dir: '/home/tree/public' })), 403);
  });

  await t.test('missing and non-directories are 400s naming dir', async () => {
    for (const dir of ['/home/tree/nothing', '/home/tree/file.txt', '/home/tree/public/dangling', '/home/tree/public/a.txt/x']) {
      const reply = await root.call('fs', 'dirlist', { dir });
      assert.equal(code(reply), 400, dir);
      assert.deepEqual(
        (reply.args as { errors: Array<{ field: string }> }).errors.map((e) => e.field),
        ['dir'],
      );
    }
  });

  await t.test('a directory of 10 010 entries comes back as its first 10 000 by name', async () => {
    const names = Object.keys(listing(await root.call('fs', 'dirlist', { dir: '/home/tree/big' })));
    assert.equal(names.length, 10_000);
    assert.ok(names.includes('n00000') && names.includes('n09999') && !names.includes('n10000'));
  });
});
