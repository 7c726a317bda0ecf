/**
 * The user's hostadm directory: `$XDG_CONFIG_HOME/hostadm` (default `~/.config/hostadm`), mode 0700.
 *   config.json        profiles and the default profile
 *   tokens/<key>.json  cached session tokens, one per profile (mode 0600)
 *   tickets/<key>.json the resumption ticket of a bridge profile's host, with its secret (mode 0600)
 *   tickets/bridge-<hash>.json  the sign-in ticket a bridge gave a key, with its secret (mode 0600)
 *   keys/<name>.key    private keys (PKCS#8 PEM, mode 0600) and keys/<name>.crt their certificates
 *   known_hosts.json   host keys pinned per bridge and host (`<bridge> <host>` → key and fingerprint)
 *   enrolled.json      which keys (md5_key) each bridge has enrolled, so a join token is spent once
 */
import { chmodSync, existsSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { ensurePrivateDir, tightenPrivateTree } from '@hostadm/shared/node/private-files.ts';
import { createHash } from 'node:crypto';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { usageError } from './exit.ts';
import type { ClientTicket } from '@hostadm/shared/crypto/resumption.ts';
import type { BridgeSignInTicket } from '@hostadm/shared/crypto/bridge-ticket.ts';
import type { TicketKeeper } from '../../../sdk/src/ticket-keeper.ts';

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

/**
 * Removes a file, if there is one. One unlink: `rmSync({ force })` stats first and runs more of Node's
 * JavaScript, ~0.2 ms in a cold command, and a used ticket is removed just before the channel's R1.
 */
function removeFile(path: string): void {
  try {
    unlinkSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
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
  removeFile(tokenPath(key));
}

// ------------------------------------------------------------------ resumption tickets

/**
 * One ticket per profile (the same key as the token cache): the next bridged command resumes the
 * channel with it instead of the RSA handshake (docs/protocol.md "Resumption"). The SDK sends it only
 * to the host whose key it names.
 */
const ticketPath = (key: string) => join(configDir(), 'tickets', `${key}.json`);

export function readTicket(key: string): ClientTicket | undefined {
  const path = ticketPath(key);
  try {
    const t = JSON.parse(readFileSync(path, 'utf8')) as Partial<ClientTicket>;
    const strings = [t.ticket, t.secret, t.hostKey, t.md5Key, t.channel].every((v) => typeof v === 'string');
    // A damaged file is only a lost ticket: the full handshake follows.
    return strings && typeof t.expiresAt === 'number' ? (t as ClientTicket) : undefined;
  } catch {
    return undefined;
  }
}

export function writeTicket(key: string, ticket: ClientTicket): void {
  ensureDir(join(ensureDir(configDir()), 'tickets'));
  writePrivateFile(ticketPath(key), `${JSON.stringify(ticket)}\n`);
}

export function deleteTicket(key: string): void {
  removeFile(ticketPath(key));
}

export interface Prefetching<T> {
  /** Reads the file now; the next `load` takes this read instead of reading again. */
  prefetch(): T | undefined;
}

/**
 * A ticket file as the SDK's store, readable ahead (`prefetch`, while the process waits for the bridge
 * anyway) by one read the next `load` takes. A save forgets that read (the file changed) and a load
 * without one reads the file, so what the SDK loads is what the file held when it was read.
 */
export function ticketFile<T>(file: { read(): T | undefined; write(ticket: T): void; remove(): void }): TicketKeeper<T> & Prefetching<T> {
  let ahead: { ticket: T | undefined } | null = null;
  return {
    prefetch: () => (ahead ??= { ticket: file.read() }).ticket,
    load() {
      const read = ahead;
      ahead = null;
      return read ? read.ticket : file.read();
    },
    save(ticket) {
      ahead = null;
      if (ticket) file.write(ticket);
      else file.remove();
    },
  };
}

/**
 * One sign-in ticket per bridge and key (docs/bridge-protocol.md §2.3): every profile that reaches
 * hosts through that bridge with that key signs in with it instead of RSA, until it expires. Named by
 * a hash of the bridge's URL and the key's md5_key, so no profile name can collide with it.
 */
const bridgeTicketPath = (bridgeUrl: string, md5: string) =>
  join(configDir(), 'tickets', `bridge-${createHash('sha256').update(`${bridgeUrl}\n${md5}`).digest('hex').slice(0, 24)}.json`);

export function readBridgeTicket(bridgeUrl: string, md5: string): BridgeSignInTicket | undefined {
  const path = bridgeTicketPath(bridgeUrl, md5);
  try {
    const t = JSON.parse(readFileSync(path, 'utf8')) as Partial<BridgeSignInTicket>;
    const strings = [t.ticket, t.secret, t.md5Key, t.bridge].every((v) => typeof v === 'string');
    // A damaged file is only a lost ticket: the key sign-in follows.
    return strings && typeof t.expiresAt === 'number' ? (t as BridgeSignInTicket) : undefined;
  } catch {
    return undefined;
  }
}

export function writeBridgeTicket(bridgeUrl: string, md5: string, ticket: BridgeSignInTicket): void {
  ensureDir(join(ensureDir(configDir()), 'tickets'));
  writePrivateFile(bridgeTicketPath(bridgeUrl, md5), `${JSON.stringify(ticket)}\n`);
}

export function deleteBridgeTicket(bridgeUrl: string, md5: string): void {
  removeFile(bridgeTicketPath(bridgeUrl, md5));
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
  return `${keyPath.replace(/\.(key|pem)$/, '')}.crt`;
}

// ------------------------------------------------------------------ known hosts (bridge host keys)

export interface KnownHost {
  /** base64 raw Ed25519 public key. */
  hostKey: string;
  fingerprint: string;
  addedAt: string;
}

const knownHostsPath = () => join(configDir(), 'known_hosts.json');

/**
 * One spelling per bridge, so pins, profiles and token caches do not depend on how the URL was typed:
 * scheme and host lower-cased, the scheme's default port dropped, a trailing `/` or `/relay` removed
 * (`ws://H:12160/relay/` → `ws://h:12160`). Anything that is not a ws(s) URL comes back unchanged.
 */
export function normalizeBridgeUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url.trim());
  } catch {
    return url;
  }
  if (parsed.protocol !== 'ws:' && parsed.protocol !== 'wss:') return url;
  const path = parsed.pathname.replace(/\/+$/, '').replace(/\/relay$/, '');
  // URL already lower-cases the host and drops a default port.
  return `${parsed.protocol}//${parsed.host}${path}${parsed.search}`;
}

export function knownHostEntry(bridge: string, host: string): string {
  return `${normalizeBridgeUrl(bridge)} ${host}`;
}

export function loadKnownHosts(): Record<string, KnownHost> {
  const path = knownHostsPath();
  if (!existsSync(path)) return {};
  try {
    const stored = JSON.parse(readFileSync(path, 'utf8')) as Record<string, KnownHost>;
    // Entries pinned before URLs were normalized keep working under the normalized spelling.
    const all: Record<string, KnownHost> = {};
    for (const [entry, known] of Object.entries(stored)) {
      const space = entry.indexOf(' ');
      all[space > 0 ? knownHostEntry(entry.slice(0, space), entry.slice(space + 1)) : entry] ??= known;
    }
    return all;
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

// ------------------------------------------------------------------ bridge enrollments

const enrolledPath = () => join(configDir(), 'enrolled.json');

function loadEnrolled(): Record<string, string[]> {
  const path = enrolledPath();
  if (!existsSync(path)) return {};
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Record<string, string[]>;
  } catch {
    return {};
  }
}

/** Whether this key was enrolled at this bridge from here (a join token would be spent for nothing). */
export function isEnrolled(bridge: string, md5Key: string): boolean {
  return loadEnrolled()[normalizeBridgeUrl(bridge)]?.includes(md5Key) ?? false;
}

export function markEnrolled(bridge: string, md5Key: string): void {
  const all = loadEnrolled();
  const url = normalizeBridgeUrl(bridge);
  all[url] = [...new Set([...(all[url] ?? []), md5Key])];
  ensureDir(configDir());
  writePrivateFile(enrolledPath(), `${JSON.stringify(all, null, 2)}\n`);
}
