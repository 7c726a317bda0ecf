/**
 * @module Keeps the bridge's tables from growing without bound: the sweep prunes what can no longer
 * change a decision (`KeyStore.prune`: spent join tokens past their expiry, lifted blocks, failures
 * older than the counting window) on both runtimes with the same rule. It runs on the first sweep,
 * then every `pruneIntervalSeconds`, in batches of `pruneBatchRows` per table; while a batch comes back
 * full, the next sweep takes the next batch instead of one long delete.
 */
import type { RelayConfig } from './config.ts';
import type { Clock, KeyStore, PrunedRows, RelayLogger } from './ports.ts';

/**
 * Where the time of the last prune is kept. The Node bridge keeps it in memory; a Durable Object,
 * which loses its memory between alarms, keeps it in its storage so a wake-up does not prune again.
 */
export interface PruneMark {
  get(): number | undefined;
  set(at: number): void;
}

export function memoryMark(): PruneMark {
  let at: number | undefined;
  return { get: () => at, set: (value) => (at = value) };
}

export class StoreRetention {
  private readonly store: KeyStore;
  private readonly config: RelayConfig;
  private readonly clock: Clock;
  private readonly logger: RelayLogger;
  private readonly mark: PruneMark;

  constructor(deps: { store: KeyStore; config: RelayConfig; clock: Clock; logger: RelayLogger; mark?: PruneMark }) {
    this.store = deps.store;
    this.config = deps.config;
    this.clock = deps.clock;
    this.logger = deps.logger;
    this.mark = deps.mark ?? memoryMark();
  }

  /** Whether a prune is due: never pruned yet, the interval has passed, or the last batch came back full. */
  due(now = this.clock.now()): boolean {
    const last = this.mark.get();
    return last === undefined || now - last >= this.config.pruneIntervalSeconds * 1000;
  }

  /**
   * Prunes one batch per table when due; returns what went (null when not due or when the store
   * failed: a prune never fails the sweep that runs it, it is tried again at the next interval).
   */
  async pruneIfDue(): Promise<PrunedRows | null> {
    const now = this.clock.now();
    if (!this.due(now)) return null;
    const interval = this.config.pruneIntervalSeconds * 1000;
    const limit = this.config.pruneBatchRows;
    const { failures, windowSeconds, blockSeconds } = this.config.blacklist;
    this.mark.set(now);
    let pruned: PrunedRows;
    try {
      pruned = await this.store.prune(now, { failures, windowMs: windowSeconds * 1000, blockMs: blockSeconds * 1000 }, limit);
    } catch (err) {
      this.logger.error({ err }, 'could not prune the store');
      return null;
    }
    const more = pruned.usedJoinTokens >= limit || pruned.blacklist >= limit || pruned.authFailures >= limit;
    // More rows are waiting: due again at once (kept in the mark, so a hub that sleeps still knows).
    if (more) this.mark.set(now - interval);
    if (pruned.usedJoinTokens + pruned.blacklist + pruned.authFailures > 0) {
      this.logger.info({ ...pruned, more }, 'pruned spent join tokens, lifted blocks and old failures');
    }
    return pruned;
  }
}
