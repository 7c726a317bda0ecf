/**
 * @module The directory (docs/bridge-protocol.md §2.10): a client signed in on `/relay/directory`
 * is announced the hosts its key may reach, each with the room where it is reached, and again
 * whenever that set changes. Nothing is relayed there.
 *
 * Hosts come from two places: agents in host rooms of this relay (Node: every room is in one
 * process, so a change is announced at once), and the bridge-wide `HostIndex` (Workers: D1, written
 * by each host's object when its agent lists its keys). The index is read when the client lists its
 * keys and then on `poll()` (the Durable Object's alarm); an announcement goes out only when its
 * tag (who, how reached, where) changed, the way an HTTP poll with an ETag would.
 */
import { eventEnvelope } from '@hostadm/shared/protocol/envelope.ts';
import type { PeerInfo } from './announcement.ts';
import { isHostEntry } from './matching.ts';
import type { RelayMetrics } from './metrics.ts';
import type { Peer } from './peer.ts';
import type { RelayLogger } from './ports.ts';
import type { DirectoryHost, HostIndex } from './rooms.ts';

/** An announced host: the usual entry, plus the room to open for it. */
export interface DirectoryEntry extends PeerInfo {
  room: string;
}

export interface DirectoryDeps {
  index: HostIndex | null;
  metrics: RelayMetrics;
  logger: RelayLogger;
  /** Saves a directory peer after its announcement changed (a runtime that sleeps). */
  persist: (peer: Peer) => void;
}

export class Directory {
  private readonly deps: DirectoryDeps;
  /** Agents of this relay by index entry (the entries of each are its `directoryEntries`: no second table per agent). */
  private readonly hostsByEntry = new Map<string, Set<Peer>>();
  /** Directory clients of this relay, by entry. */
  private readonly clientsByEntry = new Map<string, Set<Peer>>();
  readonly clients = new Set<Peer>();
  /** The latest lookup started for each client: an older answer arriving late is dropped. */
  private readonly lookups = new WeakMap<Peer, number>();
  private lookupSeq = 0;

  constructor(deps: DirectoryDeps) {
    this.deps = deps;
  }

  /** An agent in its host room listed its keys (or was revived with them: `indexed` false). */
  hostListed(agent: Peer, entries: ReadonlySet<string>, indexed = true): void {
    const before = agent.directoryEntries ?? undefined;
    this.unindexHost(agent);
    agent.directoryEntries = entries;
    for (const e of entries) addTo(this.hostsByEntry, e, agent);
    if (indexed && this.deps.index && agent.key) {
      this.deps.index
        .listed({
          keyId: agent.key.id,
          connectionId: agent.id,
          nickname: agent.key.nickname,
          hostname: agent.hostname,
          fingerprint: agent.hostKeyFingerprint,
          room: agent.room,
          onlineSince: agent.connectedAt,
          entries: [...entries],
        })
        .catch((err: unknown) => this.deps.logger.warn({ err, peer: agent.id }, 'could not index the host'));
    }
    this.refreshClientsOf(before, entries);
  }

  hostLeft(agent: Peer): void {
    const before = agent.directoryEntries;
    if (!before) return;
    this.unindexHost(agent);
    agent.directoryEntries = null;
    if (this.deps.index && agent.key) {
      this.deps.index
        .left({ keyId: agent.key.id, connectionId: agent.id })
        .catch((err: unknown) => this.deps.logger.warn({ err }, 'could not unindex the host'));
    }
    this.refreshClientsOf(before, undefined);
  }

  /** A directory client listed its entries: announce what it may reach now (always, as the answer). */
  clientListed(client: Peer, entries: ReadonlySet<string>, announce = true): Promise<void> {
    this.clientLeft(client);
    client.md5Keys = entries;
    this.clients.add(client);
    for (const e of entries) addTo(this.clientsByEntry, e, client);
    return announce ? this.refresh(client, true) : Promise.resolve();
  }

  clientLeft(client: Peer): void {
    if (!this.clients.delete(client)) return;
    for (const e of client.md5Keys) removeFrom(this.clientsByEntry, e, client);
  }

  /** Re-reads the index for every directory client; announces the changed offers. */
  async poll(): Promise<void> {
    await Promise.all([...this.clients].map((c) => this.refresh(c, false)));
  }

  /** Whether anyone here waits for index changes (the runtime polls only then). */
  get watching(): boolean {
    return this.clients.size > 0 && this.deps.index !== null;
  }

  private async refresh(client: Peer, force: boolean): Promise<void> {
    const seq = ++this.lookupSeq;
    this.lookups.set(client, seq);
    const entries = [...client.md5Keys];
    const found = new Map<string, DirectoryHost>();
    for (const e of entries) {
      for (const agent of this.hostsByEntry.get(e) ?? []) {
        if (agent.closed || !agent.key) continue;
        const host = found.get(agent.id) ?? localHost(agent);
        host.entries.push(e);
        found.set(agent.id, host);
      }
    }
    if (this.deps.index && entries.length > 0) {
      this.deps.metrics.directoryLookups++;
      try {
        for (const h of await this.deps.index.lookup(entries)) {
          const known = found.get(h.id);
          if (known) known.entries.push(...h.entries);
          else found.set(h.id, h);
        }
      } catch (err) {
        this.deps.logger.warn({ err, peer: client.id }, 'directory lookup failed: keeping the last announcement');
        if (!force) return;
      }
    }
    if (client.closed || this.lookups.get(client) !== seq) return;
    const hosts = [...found.values()].sort((a, b) => a.onlineSince - b.onlineSince || (a.id < b.id ? -1 : 1));
    const peers = hosts.map(entryOf);
    const tag = peers.map((p) => `${p.id} ${p.access} ${p.room} ${p.nickname}`).join(',');
    if (!force && tag === client.announcedAccess) return;
    client.announcedAccess = tag;
    this.deps.metrics.announcements++;
    client.socket.send(JSON.stringify(eventEnvelope('bridge', { available_connections: peers.map((p) => p.id), peers })));
    this.deps.persist(client);
  }

  private refreshClientsOf(before: ReadonlySet<string> | undefined, after: ReadonlySet<string> | undefined): void {
    const affected = new Set<Peer>();
    for (const set of [before, after]) for (const e of set ?? []) for (const c of this.clientsByEntry.get(e) ?? []) affected.add(c);
    for (const c of affected) void this.refresh(c, false);
  }

  private unindexHost(agent: Peer): void {
    for (const e of agent.directoryEntries ?? []) removeFrom(this.hostsByEntry, e, agent);
  }
}

function localHost(agent: Peer): DirectoryHost {
  return {
    id: agent.id,
    keyId: agent.key!.id,
    nickname: agent.key!.nickname,
    hostname: agent.hostname,
    fingerprint: agent.hostKeyFingerprint,
    room: agent.room,
    onlineSince: agent.connectedAt,
    entries: [],
  };
}

function entryOf(h: DirectoryHost): DirectoryEntry {
  return {
    id: h.id,
    kind: 'agent',
    nickname: h.nickname,
    hostname: h.hostname,
    host_key_fingerprint: h.fingerprint,
    access: h.entries.some((e) => !isHostEntry(e)) ? 'key' : 'password',
    online_since: new Date(h.onlineSince).toISOString(),
    room: h.room,
  };
}

function addTo(map: Map<string, Set<Peer>>, key: string, peer: Peer): void {
  let set = map.get(key);
  if (!set) map.set(key, (set = new Set()));
  set.add(peer);
}

function removeFrom(map: Map<string, Set<Peer>>, key: string, peer: Peer): void {
  const set = map.get(key);
  set?.delete(peer);
  if (set?.size === 0) map.delete(key);
}
