/**
 * The user's hostadm directory: `$XDG_CONFIG_HOME/hostadm` (default `~/.config/hostadm`), mode 0700.
 *   config.json        profiles and the default profile
 *   tokens/<key>.json  cached session tokens, one per profile (mode 0600)
 *   keys/<name>.key    private keys (PKCS#8 PEM, mode 0600) and keys/<name>.crt their certificates
 *   known_hosts.json   host keys pinned per bridge and host (`<bridge> <host>` → key and fingerprint)
 */
import { chmodSync, existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { ensurePrivateDir, tightenPrivateTree } from '@hostadm/shared/node/private-files.ts';
import { createHash } from 'node:crypto';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { usageError } from './exit.ts';

export interface Profile {
  /** `ws://host:port` or `wss://host:port` of the agent (direct); absent for a bridge profile. */
  url?: string;
  /** `ws(s)://bridge:port`: reach the host through this bridge (with `host` and the profile's key). */
  bridge?: string;
  /** The host behind the bridge: its nickname, hostname or `SHA256:` fingerprint. */
  host?: string;
  user?: string;
  /** Path of a private key file used for key sign-in. */
  key?: string;
}

export interface ConfigFile {
  default?: string;
  profiles: Record<string, Profile>;
}

export interface CachedToken {
  url: string;
  user: string;
  token: string;
  ttlSeconds: number;
  /** Epoch ms after which the token is surely expired (last use + validity). */
  expiresAt: number;
}

export function configDir(): string {
  const base = process.env.XDG_CONFIG_HOME || join(homedir(), '.config');
  return join(base, 'hostadm');
}

/** Creates `path` 0700, or tightens it when it exists with a wider mode. */
export function ensureDir(path: string): string {
  ensurePrivateDir(path);
  return path;
}

const configPath = () => join(configDir(), 'config.json');

export function loadConfig(): ConfigFile {
  const path = configPath();
  if (!existsSync(path)) return { profiles: {} };
  // Keys, cached tokens and pins: tightened to 0700/0600 when a copy or a umask left them wider.
  const tightened = tightenPrivateTree(configDir());
  if (tightened.length > 0) process.stderr.write(`hostadm: tightened modes (0700/0600) of ${tightened.join(', ')}\n`);
  try {
    const parsed = JSON.parse(readFileSync(path, 'utf8')) as Partial<ConfigFile>;
    return { ...(parsed.default ? { default: parsed.default } : {}), profiles: parsed.profiles ?? {} };
  } catch (err) {
    throw usageError(`cannot read ${path}: ${(err as Error).message}`);
  }
}

/** Writes atomically (temp file + rename) with mode 0600. */
export function writePrivateFile(path: string, text: string): void {
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, text, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, path);
}

export function saveConfig(config: ConfigFile): void {
  ensureDir(configDir());
  writePrivateFile(configPath(), `${JSON.stringify(config, null, 2)}\n`);
}

export const PROFILE_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$/;

// ------------------------------------------------------------------ token cache

/** The cache file's name: the profile, or a hash of url and user for a connection without one. */
export function tokenKey(profile: string | undefined, url: string, user: string): string {
  if (profile) return `profile-${profile}`;
  return `url-${createHash('sha256').update(`${url}\n${user}`).digest('hex').slice(0, 16)}`;
}

const tokenPath = (key: string) => join(configDir(), 'tokens', `${key}.json`);

export function readToken(key: string, url: string, user: string): CachedToken | undefined {
  const path = tokenPath(key);
  if (!existsSync(path)) return undefined;
  try {
    const t = JSON.parse(readFileSync(path, 'utf8')) as CachedToken;
    if (t.url !== url || t.user !== user || typeof t.token !== 'string') return undefined;
    if (Date.now() >= t.expiresAt) return undefined;
    return t;
  } catch {
    return undefined;
  }
}

export function writeToken(key: string, token: CachedToken): void {
  ensureDir(join(ensureDir(configDir()), 'tokens'));
  writePrivateFile(tokenPath(key), `${JSON.stringify(token)}\n`);
}

export function deleteToken(key: string): void {
  rmSync(tokenPath(key), { force: true });
}

// ------------------------------------------------------------------ keys

export const KEY_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$/;

export function keysDir(): string {
  return join(configDir(), 'keys');
}

export function keyPaths(name: string): { key: string; cert: string } {
  return { key: join(keysDir(), `${name}.key`), cert: join(keysDir(), `${name}.crt`) };
}

/** The certificate next to a private key file: `x.key` → `x.crt` (also `x.pem` → `x.crt`). */
export function certPathFor(keyPath: string): string {
  return keyPath.replace(/\.(key|pem)$/, '') + '.crt';
}

// ------------------------------------------------------------------ known hosts (bridge host keys)

export interface KnownHost {
  /** base64 raw Ed25519 public key. */
  hostKey: string;
  fingerprint: string;
  addedAt: string;
}

const knownHostsPath = () => join(configDir(), 'known_hosts.json');

export function knownHostEntry(bridge: string, host: string): string {
  return `${bridge} ${host}`;
}

export function loadKnownHosts(): Record<string, KnownHost> {
  const path = knownHostsPath();
  if (!existsSync(path)) return {};
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Record<string, KnownHost>;
  } catch (err) {
    throw usageError(`cannot read ${path}: ${(err as Error).message}`);
  }
}

export function pinHostKey(bridge: string, host: string, hostKey: string, fingerprint: string): void {
  const all = loadKnownHosts();
  all[knownHostEntry(bridge, host)] = { hostKey, fingerprint, addedAt: new Date().toISOString() };
  ensureDir(configDir());
  writePrivateFile(knownHostsPath(), `${JSON.stringify(all, null, 2)}\n`);
}
