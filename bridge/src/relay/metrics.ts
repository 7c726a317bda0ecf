/** @module Counters the relay keeps; `GET /metrics` serves `snapshot()` as JSON. */
import { DROP_REASONS, type DropReason } from './config.ts';
import type { PeerKind } from './ports.ts';

export interface MetricsSnapshot {
  uptime_seconds: number;
  /** Open connections now: signed-in or not, by the kind they identified as (`pending`: not yet identified). */
  connections: { agent: number; client: number; pending: number };
  connections_opened: number;
  /** Relay frames forwarded, and their bytes as sent on. */
  frames_relayed: number;
  bytes_relayed: number;
  drops: Record<DropReason, number>;
  /** Replies and drop notices not sent because the peer's own send queue was over the bound. */
  replies_suppressed: number;
  /** API calls refused because the peer already had the maximum in progress. */
  api_calls_refused: number;
  signins: number;
  /** Of `signins`, those made with a sign-in ticket (no key proof). */
  signins_by_ticket: number;
  /** Sign-in tickets given (after a key sign-in that asked for one). */
  signin_tickets_issued: number;
  signin_failures: number;
  enrollments: number;
  enrollment_failures: number;
  announcements: number;
  /** Heartbeat pongs received. */
  pongs: number;
  /** Upgrades refused because the address is blacklisted. */
  refused_blacklisted: number;
  /** Upgrades refused because the address already held `maxConnectionsPerAddress` sockets. */
  refused_too_many_connections: number;
  /** Addresses blocked by this process (failures reaching the rule). */
  addresses_blocked: number;
  revocation_cutoffs: number;
  /** Reads of the bridge-wide host index for directory sockets (Workers: one D1 query each). */
  directory_lookups: number;
  /** Connections the bridge closed, by close code. */
  closes: Record<string, number>;
  /**
   * Node: idle sockets parked (`ws`'s objects dropped, runtime/node/parking.ts): `parked` now (a gauge),
   * `parks` and `wakes` since start. Workers hibernates whole objects instead: all 0.
   */
  parking: { parked: number; parks: number; wakes: number };
}

/** What a runtime that sleeps keeps of the counters (the open-connection gauges are recounted). */
export type SavedCounters = Omit<MetricsSnapshot, 'uptime_seconds' | 'connections'> & { started_at: number };

export class RelayMetrics {
  startedAt: number;
  readonly open = { agent: 0, client: 0, pending: 0 };
  connectionsOpened = 0;
  framesRelayed = 0;
  bytesRelayed = 0;
  readonly drops = Object.fromEntries(DROP_REASONS.map((r) => [r, 0])) as Record<DropReason, number>;
  repliesSuppressed = 0;
  apiCallsRefused = 0;
  signins = 0;
  signinsByTicket = 0;
  signinTicketsIssued = 0;
  signinFailures = 0;
  enrollments = 0;
  enrollmentFailures = 0;
  announcements = 0;
  pongs = 0;
  refusedBlacklisted = 0;
  refusedTooManyConnections = 0;
  addressesBlocked = 0;
  revocationCutoffs = 0;
  directoryLookups = 0;
  readonly closes: Record<string, number> = {};
  readonly parking = { parked: 0, parks: 0, wakes: 0 };

  constructor(now: number) {
    this.startedAt = now;
  }

  opened(): void {
    this.connectionsOpened++;
    this.open.pending++;
  }

  /** Moves an open connection from `pending` (or one kind) to another. */
  moved(from: PeerKind | 'pending', to: PeerKind | 'pending' | null): void {
    this.open[from]--;
    if (to) this.open[to]++;
  }

  closedBy(code: number): void {
    this.closes[code] = (this.closes[code] ?? 0) + 1;
  }

  save(): SavedCounters {
    const { uptime_seconds: _uptime, connections: _open, ...counters } = this.snapshot(this.startedAt);
    return { ...counters, started_at: this.startedAt };
  }

  restore(saved: SavedCounters): void {
    this.startedAt = saved.started_at;
    this.connectionsOpened = saved.connections_opened;
    this.framesRelayed = saved.frames_relayed;
    this.bytesRelayed = saved.bytes_relayed;
    for (const reason of DROP_REASONS) this.drops[reason] = saved.drops[reason] ?? 0;
    this.repliesSuppressed = saved.replies_suppressed;
    this.apiCallsRefused = saved.api_calls_refused;
    this.signins = saved.signins;
    this.signinsByTicket = saved.signins_by_ticket ?? 0;
    this.signinTicketsIssued = saved.signin_tickets_issued ?? 0;
    this.signinFailures = saved.signin_failures;
    this.enrollments = saved.enrollments;
    this.enrollmentFailures = saved.enrollment_failures;
    this.announcements = saved.announcements;
    this.pongs = saved.pongs;
    this.refusedBlacklisted = saved.refused_blacklisted;
    // Counters saved by a bridge from before this counter existed have none.
    this.refusedTooManyConnections = saved.refused_too_many_connections ?? 0;
    this.addressesBlocked = saved.addresses_blocked;
    this.revocationCutoffs = saved.revocation_cutoffs;
    this.directoryLookups = saved.directory_lookups ?? 0;
    Object.assign(this.closes, saved.closes);
    // Saved by a runtime that never parks, or before parking existed: nothing parked.
    this.parking.parks = saved.parking?.parks ?? 0;
    this.parking.wakes = saved.parking?.wakes ?? 0;
  }

  snapshot(now: number): MetricsSnapshot {
    return {
      uptime_seconds: Math.round((now - this.startedAt) / 1000),
      connections: { ...this.open },
      connections_opened: this.connectionsOpened,
      frames_relayed: this.framesRelayed,
      bytes_relayed: this.bytesRelayed,
      drops: { ...this.drops },
      replies_suppressed: this.repliesSuppressed,
      api_calls_refused: this.apiCallsRefused,
      signins: this.signins,
      signins_by_ticket: this.signinsByTicket,
      signin_tickets_issued: this.signinTicketsIssued,
      signin_failures: this.signinFailures,
      enrollments: this.enrollments,
      enrollment_failures: this.enrollmentFailures,
      announcements: this.announcements,
      pongs: this.pongs,
      refused_blacklisted: this.refusedBlacklisted,
      refused_too_many_connections: this.refusedTooManyConnections,
      addresses_blocked: this.addressesBlocked,
      revocation_cutoffs: this.revocationCutoffs,
      directory_lookups: this.directoryLookups,
      closes: { ...this.closes },
      parking: { ...this.parking },
    };
  }
}

/**
 * Several relays' counters as one (Workers: one snapshot per object, flushed periodically): every
 * count and gauge added up, by label where labelled; the uptime is the longest.
 */
export function sumSnapshots(snapshots: readonly MetricsSnapshot[]): MetricsSnapshot {
  const total = new RelayMetrics(0).snapshot(0);
  const add = (into: Record<string, unknown>, from: Record<string, unknown>) => {
    for (const [k, v] of Object.entries(from)) {
      if (typeof v === 'number') into[k] = (typeof into[k] === 'number' ? (into[k] as number) : 0) + v;
      else if (v && typeof v === 'object') add((into[k] ??= {}) as Record<string, unknown>, v as Record<string, unknown>);
    }
  };
  for (const s of snapshots) {
    const uptime = Math.max(total.uptime_seconds, s.uptime_seconds);
    add(total as unknown as Record<string, unknown>, s as unknown as Record<string, unknown>);
    total.uptime_seconds = uptime;
  }
  return total;
}
