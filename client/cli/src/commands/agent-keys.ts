/**
 * `hostadm agent keys authorize|pending`: on the host itself, with access to the agent's data
 * directory, let a client key in without any password sign-in (for sites that run the agent with
 * `--no-password-auth`). A certificate file registers the key at once; an md5_key (what `hostadm keys
 * new` and `hostadm keys list` print on the client) authorizes the key for a while: the first channel
 * opened through a bridge with that key proves it and registers it. A running agent notices within
 * about 2 s and tells its bridge.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { runCommand, usageError } from '../lib/exit.ts';
import { printJson, printTable } from '../lib/output.ts';

const MD5_KEY = /^[A-Za-z0-9+/]{22}==$/;
const USER_NAME = /^[A-Za-z_][A-Za-z0-9_.-]{0,31}$/;

function parseUser(value: string): string {
  if (!USER_NAME.test(value)) throw new InvalidArgumentError('expected a user name: a letter or _, then letters, digits, _ . - (at most 32)');
  return value;
}

function parseTtl(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 60 || n > 7 * 24 * 3600) throw new InvalidArgumentError('expected whole seconds from 60 to 604800 (a week)');
  return n;
}

/** The agent's store in `dataDir`, refusing a directory that holds no agent (a typo must not create one). */
async function openAgentKeys(dataDir: string) {
  if (!existsSync(join(dataDir, 'agent.db'))) {
    throw usageError(
      `no agent database in ${dataDir}`,
      "give the agent's --data directory (default /var/db/hostadm); run this on the host, as the agent's user",
    );
  }
  const [{ openStore }, { KeyRegistry }] = await Promise.all([import('@hostadm/agent/store/db.ts'), import('@hostadm/agent/server/keys.ts')]);
  const store = openStore(dataDir);
  return { store, keys: new KeyRegistry(store.db, { now: () => Date.now() }) };
}

/**
 * `--data` belongs to `hostadm agent` (the same flag the running agent was given), wherever it is
 * written on the command line: commander parses it on the parent, so it is read from there.
 */
function dataDirOf(cmd: Command): string {
  const data = (cmd.optsWithGlobals() as { data?: unknown }).data;
  if (typeof data !== 'string' || data === '') throw usageError("give the agent's data directory: --data DIR");
  return data;
}

export function agentKeysCommand(): Command {
  const keys = new Command('keys').description('on the host: let a client key in without a password sign-in');
  keys
    .command('authorize')
    .description('register a client certificate file, or authorize an md5_key until its owner first connects through the bridge')
    .argument('<cert-or-md5>', 'a PEM certificate or public key file, or the md5_key hostadm keys new printed')
    .requiredOption('--user <name>', 'the user the key signs in as', parseUser)
    .option('--ttl <seconds>', 'how long an md5_key authorization waits for its first use', parseTtl, 3600)
    .action(async (which: string, own: { user: string; ttl: number }, cmd: Command) => {
      await runCommand(async () => {
        const opts = { ...own, data: dataDirOf(cmd) };
        const isFile = existsSync(which);
        if (!isFile && !MD5_KEY.test(which)) {
          throw usageError(`${which} is neither a file nor an md5_key (24 characters of base64 ending in ==)`);
        }
        const { store, keys: registry } = await openAgentKeys(opts.data);
        try {
          if (isFile) {
            const { parsePublicKey } = await import('@hostadm/agent/server/keys.ts');
            const pubKey = Buffer.from(readFileSync(which, 'utf8')).toString('base64');
            const parsed = parsePublicKey(pubKey);
            registry.register(opts.user, pubKey, parsed, { nickname: 'authorized on the host' });
            process.stdout.write(`registered ${which} (md5_key ${parsed.md5Key}) for ${opts.user}; it signs in now, directly or through the bridge\n`);
          } else {
            const { expiresAt } = registry.authorize(which, opts.user, opts.ttl * 1000);
            process.stdout.write(
              `authorized md5_key ${which} for ${opts.user} until ${expiresAt.toISOString()}: its owner's first connection through the bridge registers it\n`,
            );
          }
        } finally {
          store.close();
        }
      });
    });
  keys
    .command('pending')
    .description('list md5_key authorizations not used yet')
    .option('--json', 'print one JSON document')
    .action(async (own: { json?: boolean }, cmd: Command) => {
      await runCommand(async () => {
        const opts = { ...own, data: dataDirOf(cmd) };
        const { store, keys: registry } = await openAgentKeys(opts.data);
        try {
          const rows = registry.authorizations().map((a) => ({ md5_key: a.md5Key, user: a.user, expires_at: a.expiresAt.toISOString() }));
          if (opts.json) printJson(rows);
          else if (rows.length === 0) process.stdout.write('no pending authorizations\n');
          else
            await printTable(
              ['MD5_KEY', 'USER', 'EXPIRES'],
              rows.map((r) => [r.md5_key, r.user, r.expires_at]),
            );
        } finally {
          store.close();
        }
      });
    });
  return keys;
}
