/**
 * `hostadm keys new|register|list|revoke`: RSA keys with self-signed X.509 certificates in the config
 * directory, registered through an authenticated session (`register_ssl_cert` with `proof` = the
 * session token signed with the key), then usable for key sign-in (`--key`, or a profile's key).
 */
import { createHash, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { hostname, userInfo } from 'node:os';
import type { ConnectionOptions } from '../client-commands.ts';
import { certPathFor, ensureDir, configDir, KEY_NAME, keyPaths, keysDir, writePrivateFile } from '../lib/config.ts';
import { runCommand, usageError } from '../lib/exit.ts';
import { printJson, printTable } from '../lib/output.ts';
import { openClient } from '../lib/session.ts';
import { selfSignedCertificate } from '../lib/self-signed-cert.ts';

/** base64 MD5 of the key's SPKI PEM: the `md5_key` the agent lists. */
export function md5OfCert(certPem: string): string {
  const spki = createPublicKey(certPem).export({ type: 'spki', format: 'pem' }).toString();
  return createHash('md5').update(spki, 'utf8').digest('base64');
}

function fingerprint(certPem: string): string {
  const der = Buffer.from(certPem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');
  return createHash('sha256')
    .update(der)
    .digest('hex')
    .replace(/(..)(?=.)/g, '$1:')
    .toUpperCase();
}

export async function runKeysNew(opts: { name: string; force?: boolean }): Promise<void> {
  await runCommand(async () => {
    if (!KEY_NAME.test(opts.name)) throw usageError(`--name ${opts.name}: use letters, digits, _ . - (at most 64)`);
    const paths = keyPaths(opts.name);
    if (existsSync(paths.key) && !opts.force) throw usageError(`a key named ${opts.name} exists (${paths.key}); pick another --name or add --force`);
    const certPem = await createKeyFiles(opts.name);
    process.stdout.write(
      [
        `private key   ${paths.key} (RSA 2048, mode 0600)`,
        `certificate   ${paths.cert} (self-signed, valid 10 years)`,
        `sha256        ${fingerprint(certPem)}`,
        `md5_key       ${md5OfCert(certPem)}`,
        '',
        `register it (signed in by password): hostadm keys register --name ${opts.name}`,
        '',
      ].join('\n'),
    );
  });
}

/** Writes keys/<name>.key (RSA 2048, PKCS#8, 0600) and keys/<name>.crt (self-signed); returns the certificate PEM. */
export async function createKeyFiles(name: string): Promise<string> {
  {
    const opts = { name };
    const paths = keyPaths(name);
    ensureDir(configDir());
    ensureDir(keysDir());
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const now = new Date();
    let who = 'user';
    try {
      who = userInfo().username;
    } catch {
      // no passwd entry
    }
    const certPem = selfSignedCertificate(privateKey, publicKey, {
      commonName: `hostadm ${opts.name} ${who}@${hostname()}`,
      organizationName: 'hostadm client key',
      notBefore: new Date(now.getTime() - 60_000),
      notAfter: new Date(now.getTime() + 10 * 365 * 24 * 3600 * 1000),
    });
    writePrivateFile(paths.key, privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
    // Public, but kept 0600 like everything in the config directory (the owner hands it out).
    writePrivateFile(paths.cert, certPem);
    return certPem;
  }
}

function loadLocalKey(opts: { name: string; keyFile?: string }): { name: string; keyPath: string; certPath: string; keyPem: string; certPem: string } {
  const keyPath = opts.keyFile ?? keyPaths(opts.name).key;
  const certPath = opts.keyFile ? certPathFor(opts.keyFile) : keyPaths(opts.name).cert;
  if (!existsSync(keyPath)) throw usageError(`no key at ${keyPath}`, opts.keyFile ? undefined : `create one: hostadm keys new --name ${opts.name}`);
  if (!existsSync(certPath)) throw usageError(`no certificate next to the key: ${certPath}`);
  return { name: opts.keyFile ? keyPath : opts.name, keyPath, certPath, keyPem: readFileSync(keyPath, 'utf8'), certPem: readFileSync(certPath, 'utf8') };
}

export async function runKeysRegister(opts: ConnectionOptions & { name: string; keyFile?: string; nickname?: string; email?: string }): Promise<void> {
  await runCommand(async () => {
    const local = loadLocalKey(opts);
    const session = await openClient(opts);
    try {
      const key: { certPem: string; privatePem: string; nickname?: string; email?: string } = {
        certPem: local.certPem,
        privatePem: local.keyPem,
        nickname: opts.nickname ?? (opts.keyFile ? undefined : opts.name) ?? 'hostadm',
      };
      if (opts.email) key.email = opts.email;
      await session.client.registerKey(key);
      process.stdout.write(
        `registered ${local.keyPath} (md5_key ${md5OfCert(local.certPem)})${session.target.user ? ` for ${session.target.user}` : ''} at ${session.target.url}\n` +
          `sign in with it: hostadm <command> --url ${session.target.url} --key ${local.keyPath}\n`,
      );
    } finally {
      await session.close();
    }
  });
}

/** Local keys by md5_key, to mark registered keys that are on this machine. */
function localKeysByMd5(): Map<string, string> {
  const out = new Map<string, string>();
  const dir = keysDir();
  if (!existsSync(dir)) return out;
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.crt'))) {
    try {
      out.set(md5OfCert(readFileSync(`${dir}/${file}`, 'utf8')), file.replace(/\.crt$/, ''));
    } catch {
      // not a certificate
    }
  }
  return out;
}

interface KeyRow {
  user: string;
  pub_key: string;
  nickname: string;
  email: string;
  registered: string;
  md5_key: string;
  algorithm: string;
  local: string | null;
}

async function listKeys(client: Awaited<ReturnType<typeof openClient>>['client']): Promise<KeyRow[]> {
  const reply = await client.admin.settings.list_ssl_certs();
  const local = localKeysByMd5();
  const rows: KeyRow[] = [];
  for (const [user, keys] of Object.entries(reply)) {
    for (const [pubKey, d] of Object.entries(keys)) rows.push({ user, pub_key: pubKey, ...d, local: local.get(d.md5_key) ?? null });
  }
  return rows.sort((a, b) => a.user.localeCompare(b.user) || a.registered.localeCompare(b.registered));
}

export async function runKeysList(opts: ConnectionOptions & { json?: boolean }): Promise<void> {
  await runCommand(async () => {
    const session = await openClient(opts);
    try {
      const rows = await listKeys(session.client);
      if (opts.json) printJson(rows);
      else if (rows.length === 0) process.stdout.write('no registered keys\n');
      else {
        await printTable(
          ['USER', 'NICKNAME', 'ALGORITHM', 'MD5_KEY', 'REGISTERED', 'LOCAL KEY'],
          rows.map((r) => [r.user, r.nickname, r.algorithm, r.md5_key, r.registered, r.local ?? '']),
        );
      }
    } finally {
      await session.close();
    }
  });
}

export async function runKeysRevoke(which: string, opts: ConnectionOptions & { owner?: string }): Promise<void> {
  await runCommand(async () => {
    let md5: string | undefined;
    if (KEY_NAME.test(which) && existsSync(keyPaths(which).cert)) md5 = md5OfCert(readFileSync(keyPaths(which).cert, 'utf8'));
    const session = await openClient(opts);
    try {
      const rows = (await listKeys(session.client)).filter((r) => opts.owner === undefined || r.user === opts.owner);
      let matches = md5 ? rows.filter((r) => r.md5_key === md5) : [];
      if (matches.length === 0) matches = rows.filter((r) => r.md5_key === which);
      if (matches.length === 0) matches = rows.filter((r) => r.nickname === which);
      if (matches.length === 0) throw usageError(`no registered key matches ${which}`, 'hostadm keys list shows names, nicknames and md5 keys');
      if (matches.length > 1)
        throw usageError(`${which} matches ${matches.length} keys (${matches.map((m) => `${m.user}:${m.md5_key}`).join(', ')}); give the md5_key`);
      const row = matches[0]!;
      await session.client.admin.settings.revoke_ssl_cert({ pub_key: row.pub_key, user: row.user });
      process.stdout.write(`revoked ${row.nickname || row.md5_key} of ${row.user}\n`);
    } finally {
      await session.close();
    }
  });
}
