/**
 * @module Where a socket lands (docs/bridge-protocol.md §2.10). The relay path names a *room*, and
 * peers are matched and relay frames routed only inside one room:
 *
 *   /relay                   the shared room: every peer meets every other (the protocol before rooms)
 *   /relay/host/<fp>         one host's room: only the agent whose host key has fingerprint SHA256:<fp>
 *                            signs in as an agent there; clients that want that host join it
 *   /relay/directory         a client's directory: no relaying; announces the hosts its key may reach
 *                            in their own rooms (each entry says which), and their coming and going
 *
 * On Workers each host room is a Durable Object of its own (so no relay frame ever crosses objects),
 * and each directory socket too; on Node the rooms are labels in one process's table.
 */
import type { PeerKind } from './ports.ts';

/** '' (shared), `host/<fp>`, or `directory`: the path after `/relay/`. */
export type RoomName = string;

export const SHARED_ROOM: RoomName = '';
export const DIRECTORY_ROOM: RoomName = 'directory';

/** A host key fingerprint without its `SHA256:` prefix: base64url of 32 bytes, no padding. */
const FINGERPRINT_BODY = /^[A-Za-z0-9_-]{43}$/;

/** The room a relay path names (the part after `/relay`), or null when it names none. */
export function roomOfPath(rest: string): RoomName | null {
  const path = rest.replace(/\/+$/, '');
  if (path === '') return SHARED_ROOM;
  if (path === `/${DIRECTORY_ROOM}`) return DIRECTORY_ROOM;
  const m = /^\/host\/([^/]+)$/.exec(path);
  return m && FINGERPRINT_BODY.test(m[1]!) ? `host/${m[1]}` : null;
}

/** `SHA256:<fp>` for a host room, else null. */
export function roomFingerprint(room: RoomName): string | null {
  return room.startsWith('host/') ? `SHA256:${room.slice(5)}` : null;
}

/** The room of the host whose key has this fingerprint (`SHA256:...`). */
export function hostRoom(fingerprint: string): RoomName {
  return `host/${fingerprint.replace(/^SHA256:/, '')}`;
}

/**
 * Why a peer signed in with this key may not be in this room, or null. An agent signs in only in
 * its own host room (or the shared one); the directory is for clients.
 */
export function roomRefusal(room: RoomName, kind: PeerKind, fingerprint: string | null): string | null {
  if (room === DIRECTORY_ROOM) return kind === 'agent' ? 'the directory is for clients: an agent connects to /relay/host/<its host key fingerprint>' : null;
  const owner = roomFingerprint(room);
  if (owner === null || kind === 'client') return null;
  return fingerprint === owner ? null : `this is the relay of host ${owner}: an agent connects to /relay/host/<its own host key fingerprint>`;
}

/** A host as a directory lists it: who it is, and the room where a client reaches it. */
export interface DirectoryHost {
  /** Its connection id in its room (`agent-<uuid>`). */
  id: string;
  keyId: string;
  nickname: string;
  hostname: string;
  fingerprint: string | null;
  room: RoomName;
  onlineSince: number;
  /** The index entries (md5_keys, `host:<nickname>`) under which it was found. */
  entries: string[];
}

/**
 * The bridge-wide index of hosts by md5_key, where hosts live in other objects (Workers: D1). A
 * runtime whose rooms share one process (Node) needs none: the relay indexes its own host rooms.
 */
export interface HostIndex {
  /** An agent in its host room listed its keys: index it under them (replacing what it had). */
  listed(agent: IndexedAgent): Promise<void>;
  /** The agent's connection ended. */
  left(agent: { keyId: string; connectionId: string }): Promise<void>;
  /** The hosts indexed under any of `entries`. */
  lookup(entries: readonly string[]): Promise<DirectoryHost[]>;
}

export interface IndexedAgent {
  keyId: string;
  connectionId: string;
  nickname: string;
  hostname: string;
  fingerprint: string | null;
  room: RoomName;
  onlineSince: number;
  entries: readonly string[];
}

/**
 * Where else sockets signed in with a key live (Workers: the objects the session index names), so a
 * revocation reaches every one of them. Node has one table and needs none.
 */
export interface SessionIndex {
  /**
   * Records a signed-in socket; resolves true when the key turns out revoked once the record is
   * written (a revocation that read the index just before it): the relay then cuts the key off here.
   */
  opened(session: { connectionId: string; keyId: string }): Promise<boolean>;
  closed(connectionId: string): void;
  /** Closes (4003) the key's sockets in every other object; returns how many. */
  cutOffElsewhere(keyId: string): Promise<number>;
}
