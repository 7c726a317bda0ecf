/**
 * Profiles and sessions: `profile add|list|use|remove`, the default profile, the per-profile token
 * cache (0600) that lets the next command resume without the password, login/logout, expiry. Keys:
 * `keys new` (RSA-2048 + self-signed X.509), `keys register` (proof = the session token signed),
 * `keys list`, key sign-in with `--key` and with a profile's key, `keys revoke`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { cliSetup, json, show } from './cli-support.ts';

const mode = (path: string) => statSync(path).mode & 0o777;

test('profiles: add, list, use, remove; the default profile needs no flags', async (t) => {
  const { agent, config, run } = await cliSetup(t);
  const bare = { HOSTADM_URL: undefined, HOSTADM_USER: undefined };
  const added = await run(['profile', 'add', 'sim', '--url', agent.url, '--user', 'admin'], bare);
  assert.equal(added.code, 0, show(added));
  assert.match(added.stdout, /added profile sim \(default\)/);
  await run(['profile', 'add', 'op', '--url', agent.url, '--user', 'operator'], bare);
  const file = join(config, 'hostadm', 'config.json');
  assert.equal(mode(file), 0o600);
  assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')), {
    default: 'sim',
    profiles: { sim: { url: agent.url, user: 'admin' }, op: { url: agent.url, user: 'operator' } },
  });
  const list = await run(['profile', 'list'], bare);
  assert.match(list.stdout, new RegExp(`^\\* +sim +${agent.url.replace(/[.]/g, '\\.')} +admin$`, 'm'));

  // No --url: the default profile (admin) is used; --profile picks another (operator: refused).
  assert.equal((await run(['call', 'systemmanager', 'killproc', 'pid:=412', 'signal=TERM'], bare)).code, 0);
  assert.equal((await run(['call', 'systemmanager', 'killproc', 'pid:=598', 'signal=TERM', '--profile', 'op'], bare)).code, 4);
  assert.equal((await run(['profile', 'use', 'op'], bare)).code, 0);
  assert.equal(json<{ default: string }>(await run(['profile', 'list', '--json'], bare)).default, 'op');
  assert.equal((await run(['call', 'systemmanager', 'killproc', 'pid:=598', 'signal=TERM'], bare)).code, 4);
  assert.equal((await run(['profile', 'remove', 'op'], bare)).code, 0);
  assert.equal(json<{ default: string }>(await run(['profile', 'list', '--json'], bare)).default, 'sim');
  const missing = await run(['ps', '--profile', 'nope'], bare);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /no profile named nope/);
  const badUrl = await run(['profile', 'add', 'x', '--url', 'http://example.org'], bare);
  assert.equal(badUrl.code, 2);
});

test('the token cache: the next command resumes the session without the password; logout ends it', async (t) => {
  const { agent, config, run } = await cliSetup(t);
  const bare = { HOSTADM_URL: undefined, HOSTADM_USER: undefined };
  await run(['profile', 'add', 'sim', '--url', agent.url, '--user', 'admin'], bare);
  const login = await run(['login'], bare);
  assert.equal(login.code, 0, show(login));
  assert.match(login.stdout, /signed in with the password/);
  const cache = join(config, 'hostadm', 'tokens', 'profile-sim.json');
  assert.equal(mode(cache), 0o600);
  const token = (JSON.parse(readFileSync(cache, 'utf8')) as { token: string }).token;
  assert.ok(agent.services.sessions.lookup(token), 'the cached token is a live session');

  const noPassword = { ...bare, HOSTADM_PASSWORD: undefined };
  const resumed = await run(['users', '--json'], noPassword);
  assert.equal(resumed.code, 0, show(resumed));
  const again = await run(['login'], noPassword);
  assert.match(again.stdout, /resumed the cached session/);
  assert.equal((JSON.parse(readFileSync(cache, 'utf8')) as { token: string }).token, token, 'the same session, not a new sign-in');

  // Expired on the host: without a password that is a sign-in failure; with one, a fresh session.
  agent.clock.advance(301);
  assert.equal((await run(['ps'], noPassword)).code, 3);
  assert.equal((await run(['ps'], bare)).code, 0);
  const fresh = (JSON.parse(readFileSync(cache, 'utf8')) as { token: string }).token;
  assert.notEqual(fresh, token);

  const logout = await run(['logout'], noPassword);
  assert.equal(logout.code, 0, show(logout));
  assert.match(logout.stdout, /signed out/);
  assert.equal(existsSync(cache), false);
  assert.equal(agent.services.sessions.lookup(fresh), null);
  assert.equal((await run(['ps'], noPassword)).code, 3);
});

test('keys: new, register, list, sign in with the key, revoke', async (t) => {
  const { agent, config, run } = await cliSetup(t);
  const created = await run(['keys', 'new', '--name', 'laptop']);
  assert.equal(created.code, 0, show(created));
  const keyPath = join(config, 'hostadm', 'keys', 'laptop.key');
  const certPath = join(config, 'hostadm', 'keys', 'laptop.crt');
  assert.equal(mode(keyPath), 0o600);
  const cert = new X509Certificate(readFileSync(certPath));
  assert.equal(cert.publicKey.asymmetricKeyType, 'rsa');
  assert.equal(cert.publicKey.asymmetricKeyDetails?.modulusLength, 2048);
  assert.equal(cert.issuer, cert.subject, 'self-signed');
  assert.ok(cert.verify(cert.publicKey));
  assert.ok(cert.checkPrivateKey(createPrivateKey(readFileSync(keyPath))));
  assert.match(cert.subject, /CN=hostadm laptop /);
  const twice = await run(['keys', 'new', '--name', 'laptop']);
  assert.equal(twice.code, 2, 'an existing key is not overwritten without --force');

  const registered = await run(['keys', 'register', '--name', 'laptop', '--email', 'admin@example.org']);
  assert.equal(registered.code, 0, show(registered));
  const keys = json<Array<{ user: string; nickname: string; email: string; algorithm: string; local: string | null; md5_key: string }>>(
    await run(['keys', 'list', '--json']),
  );
  assert.equal(keys.length, 1);
  assert.deepEqual(
    { ...keys[0], md5_key: undefined },
    { ...keys[0], user: 'admin', nickname: 'laptop', email: 'admin@example.org', algorithm: 'rsa', local: 'laptop', md5_key: undefined },
  );
  const table = await run(['keys', 'list']);
  assert.match(table.stdout, /^admin +laptop +rsa +\S+ +\S+ +laptop$/m);

  // Key sign-in: no password, no cached token.
  rmSync(join(config, 'hostadm', 'tokens'), { recursive: true, force: true });
  const byKey = { HOSTADM_PASSWORD: undefined, HOSTADM_USER: undefined };
  const signedIn = await run(['login', '--key', keyPath], byKey);
  assert.equal(signedIn.code, 0, show(signedIn));
  assert.match(signedIn.stdout, /signed in with the key/);
  // The same from a profile that names the key.
  rmSync(join(config, 'hostadm', 'tokens'), { recursive: true, force: true });
  await run(['profile', 'add', 'bykey', '--url', agent.url, '--key', keyPath]);
  const viaProfile = await run(['users', '--json', '--profile', 'bykey'], { ...byKey, HOSTADM_URL: undefined });
  assert.equal(viaProfile.code, 0, show(viaProfile));

  const revoked = await run(['keys', 'revoke', 'laptop']);
  assert.equal(revoked.code, 0, show(revoked));
  assert.deepEqual(json(await run(['keys', 'list', '--json'])), []);
  rmSync(join(config, 'hostadm', 'tokens'), { recursive: true, force: true });
  const refused = await run(['ps', '--key', keyPath], byKey);
  assert.equal(refused.code, 3, show(refused));
});
