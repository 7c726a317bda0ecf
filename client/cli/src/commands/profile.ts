/** `hostadm profile add|list|use|remove`: named connections in config.json. */
import { resolve } from 'node:path';
import { deleteToken, loadConfig, PROFILE_NAME, saveConfig, tokenKey, type Profile } from '../lib/config.ts';
import { runCommand, usageError } from '../lib/exit.ts';
import { printJson, printTable } from '../lib/output.ts';

export async function runProfileAdd(
  name: string,
  opts: { url?: string; bridge?: string; host?: string; user?: string; key?: string; default?: boolean },
): Promise<void> {
  await runCommand(async () => {
    if (!PROFILE_NAME.test(name)) throw usageError(`profile name ${name}: use letters, digits, _ . - (at most 64)`);
    if ((opts.url === undefined) === (opts.bridge === undefined)) throw usageError('give either --url URL or --bridge URL --host NAME');
    const address = opts.url ?? opts.bridge!;
    if (!/^wss?:\/\/[^\s/]+/.test(address)) throw usageError(`${opts.url ? '--url' : '--bridge'} ${address}: expected ws://HOST:PORT or wss://HOST:PORT`);
    if (opts.bridge && !opts.host) throw usageError('--bridge needs --host NAME|SHA256:FINGERPRINT');
    if (opts.bridge && !opts.key) throw usageError('--bridge needs --key FILE (a connection through a bridge signs in with a key)');
    const config = loadConfig();
    const profile: Profile = opts.url ? { url: opts.url } : { bridge: address, host: opts.host! };
    if (opts.user) profile.user = opts.user;
    if (opts.key) profile.key = resolve(opts.key);
    const replaced = Object.hasOwn(config.profiles, name);
    config.profiles[name] = profile;
    if (opts.default || !config.default || !config.profiles[config.default]) config.default = name;
    saveConfig(config);
    // A changed profile must not resume a session of the old one.
    if (replaced) deleteToken(tokenKey(name, '', ''));
    process.stdout.write(`${replaced ? 'replaced' : 'added'} profile ${name}${config.default === name ? ' (default)' : ''}\n`);
  });
}

export async function runProfileList(opts: { json?: boolean }): Promise<void> {
  await runCommand(async () => {
    const config = loadConfig();
    if (opts.json) {
      printJson(config);
      return;
    }
    const names = Object.keys(config.profiles).sort();
    if (names.length === 0) {
      process.stdout.write('no profiles; add one: hostadm profile add NAME --url ws://HOST:PORT --user USER\n');
      return;
    }
    await printTable(
      ['', 'PROFILE', 'URL', 'USER', 'KEY'],
      names.map((n) => {
        const p = config.profiles[n]!;
        return [config.default === n ? '*' : '', n, p.url ?? `${p.bridge ?? ''} → ${p.host ?? ''}`, p.user ?? '', p.key ?? ''];
      }),
    );
  });
}

export async function runProfileUse(name: string): Promise<void> {
  await runCommand(async () => {
    const config = loadConfig();
    if (!config.profiles[name]) throw usageError(`no profile named ${name}`);
    config.default = name;
    saveConfig(config);
    process.stdout.write(`default profile: ${name}\n`);
  });
}

export async function runProfileRemove(name: string): Promise<void> {
  await runCommand(async () => {
    const config = loadConfig();
    if (!config.profiles[name]) throw usageError(`no profile named ${name}`);
    delete config.profiles[name];
    if (config.default === name) {
      const next = Object.keys(config.profiles).sort()[0];
      if (next) config.default = next;
      else delete config.default;
    }
    saveConfig(config);
    deleteToken(tokenKey(name, '', ''));
    process.stdout.write(`removed profile ${name}\n`);
  });
}
