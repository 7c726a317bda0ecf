/**
 * @module What the Workers bridge's objects share, in D1 (drizzle-orm/d1, bound parameters only;
 * docs/bridge-protocol.md §2.10). No object talks to another per frame; these are written at
 * sign-in, key listing, close and every few seconds of counters, and read by directory sockets, by
 * a revocation, and by `/metrics`:
 * - `host_index`: each online host under its md5_keys, written by its own object;
 * - `bridge_sessions`: which object holds each signed-in socket (revocation fans out to those);
 * - `object_metrics`: each object's counters, flushed periodically and summed on read.
 */
import { and, eq, inArray, ne } from 'drizzle-orm';
import { drizzle, type DrizzleD1Database } from 'drizzle-orm/d1';
import { bridgeKeys, bridgeSessions, hostIndex, objectMetrics } from '../../db/schema.ts';
import * as schema from '../../db/schema.ts';
import { sumSnapshots, type MetricsSnapshot } from '../../relay/metrics.ts';
import type { RelayLogger } from '../../relay/ports.ts';
import type { DirectoryHost, HostIndex, IndexedAgent, SessionIndex } from '../../relay/rooms.ts';

/** D1 binds at most 100 parameters per statement: 9 columns a row → 11 rows per insert. */
const ROWS_PER_INSERT = 11;

export class D1HostIndex implements HostIndex {
  private readonly db: DrizzleD1Database<typeof schema>;
  private readonly scope: string;

  constructor(d1: D1Database, scope: string) {
    this.db = drizzle(d1, { schema });
    this.scope = scope;
  }

  /** One batch (one transaction): the key's old rows go, the new ones come, nothing in between is seen. */
  async listed(agent: IndexedAgent): Promise<void> {
    const { db, scope } = this;
    const rows = agent.entries.map((entry) => ({
      scope,
      entry,
      keyId: agent.keyId,
      connectionId: agent.connectionId,
      room: agent.room,
      nickname: agent.nickname,
      hostname: agent.hostname,
      fingerprint: agent.fingerprint,
      onlineSince: new Date(agent.onlineSince),
    }));
    const inserts = [];
    for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) inserts.push(db.insert(hostIndex).values(rows.slice(i, i + ROWS_PER_INSERT)));
    await db.batch([db.delete(hostIndex).where(and(eq(hostIndex.scope, scope), eq(hostIndex.keyId, agent.keyId))), ...inserts]);
  }

  /** Only this connection's rows: a newer connection of the same key (which replaced it) keeps its own. */
  async left(agent: { keyId: string; connectionId: string }): Promise<void> {
    await this.db
      .delete(hostIndex)
      .where(and(eq(hostIndex.scope, this.scope), eq(hostIndex.keyId, agent.keyId), eq(hostIndex.connectionId, agent.connectionId)))
      .run();
  }

  async lookup(entries: readonly string[]): Promise<DirectoryHost[]> {
    const rows = await this.db
      .select()
      .from(hostIndex)
      .where(and(eq(hostIndex.scope, this.scope), inArray(hostIndex.entry, [...entries])))
      .all();
    const hosts = new Map<string, DirectoryHost>();
    for (const r of rows) {
      let host = hosts.get(r.connectionId);
      if (!host) {
        host = {
          id: r.connectionId,
          keyId: r.keyId,
          nickname: r.nickname,
          hostname: r.hostname,
          fingerprint: r.fingerprint,
          room: r.room,
          onlineSince: r.onlineSince.getTime(),
          entries: [],
        };
        hosts.set(r.connectionId, host);
      }
      host.entries.push(r.entry);
    }
    return [...hosts.values()];
  }
}

/** How a revocation reaches another object: its name, and the key to cut off there. */
export type CutOffIn = (object: string, keyId: string) => Promise<number>;

export class D1SessionIndex implements SessionIndex {
  private readonly db: DrizzleD1Database<typeof schema>;
  private readonly scope: string;
  private readonly object: string;
  private readonly cutOffIn: CutOffIn;
  private readonly logger: RelayLogger;

  constructor(d1: D1Database, where: { scope: string; object: string }, cutOffIn: CutOffIn, logger: RelayLogger) {
    this.db = drizzle(d1, { schema });
    this.scope = where.scope;
    this.object = where.object;
    this.cutOffIn = cutOffIn;
    this.logger = logger;
  }

  /**
   * The row first, then the key's revocation: a revocation either reads this row (and cuts the socket
   * off through this object) or was written before this read (which sees it). D1 runs one at a time.
   */
  async opened(session: { connectionId: string; keyId: string }): Promise<boolean> {
    const [, key] = await this.db.batch([
      this.db
        .insert(bridgeSessions)
        .values({ connectionId: session.connectionId, scope: this.scope, keyId: session.keyId, object: this.object, openedAt: new Date() })
        .onConflictDoNothing(),
      this.db.select({ revokedAt: bridgeKeys.revokedAt }).from(bridgeKeys).where(eq(bridgeKeys.id, session.keyId)),
    ]);
    return key[0]?.revokedAt != null;
  }

  closed(connectionId: string): void {
    this.db
      .delete(bridgeSessions)
      .where(eq(bridgeSessions.connectionId, connectionId))
      .run()
      .catch((err: unknown) => this.logger.warn({ err }, 'could not forget the session'));
  }

  async cutOffElsewhere(keyId: string): Promise<number> {
    const objects = await this.objectsOf(keyId, this.object);
    const counts = await Promise.all(objects.map((o) => this.cutOffIn(o, keyId)));
    return counts.reduce((a, b) => a + b, 0);
  }

  /** The objects holding sockets signed in with the key (except `except`). */
  async objectsOf(keyId: string, except = ''): Promise<string[]> {
    const rows = await this.db
      .selectDistinct({ object: bridgeSessions.object })
      .from(bridgeSessions)
      .where(and(eq(bridgeSessions.scope, this.scope), eq(bridgeSessions.keyId, keyId), ne(bridgeSessions.object, except)))
      .all();
    return rows.map((r) => r.object);
  }

  /** Every object with a signed-in socket whose name contains `part` (test hooks: the directories). */
  async objectsNamed(part: string): Promise<string[]> {
    const rows = await this.db.selectDistinct({ object: bridgeSessions.object }).from(bridgeSessions).where(eq(bridgeSessions.scope, this.scope)).all();
    return rows.map((r) => r.object).filter((o) => o.includes(part));
  }
}

export class D1MetricsStore {
  private readonly db: DrizzleD1Database<typeof schema>;
  private readonly scope: string;

  constructor(d1: D1Database, scope: string) {
    this.db = drizzle(d1, { schema });
    this.scope = scope;
  }

  async flush(object: string, snapshot: MetricsSnapshot, now: number): Promise<void> {
    const counters = JSON.stringify(snapshot);
    await this.db
      .insert(objectMetrics)
      .values({ object, scope: this.scope, counters, updatedAt: new Date(now) })
      .onConflictDoUpdate({ target: objectMetrics.object, set: { counters, updatedAt: new Date(now) } })
      .run();
  }

  /** Every object's last flush, summed; `objects` says how many objects reported. */
  async sum(): Promise<MetricsSnapshot & { objects: number }> {
    const rows = await this.db.select({ counters: objectMetrics.counters }).from(objectMetrics).where(eq(objectMetrics.scope, this.scope)).all();
    return { ...sumSnapshots(rows.map((r) => JSON.parse(r.counters) as MetricsSnapshot)), objects: rows.length };
  }
}
