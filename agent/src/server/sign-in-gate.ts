/**
 * Bounds the work unauthenticated peers can cause with password sign-ins. A password check costs a
 * hash (sim: scrypt) or a PAM conversation, so:
 * - each address gets a burst of attempts and then a steady rate (loopback too: 96 bad sign-ins a
 *   second from loopback once stalled the agent); attempts over it are refused at once (429);
 * - an attempt reserves its failure in the blacklist count before the check runs, so 40 parallel
 *   guesses count as 40 at once and those past the limit are refused unchecked;
 * - at most `maxConcurrent` checks run at a time, `maxQueued` wait; the rest are refused (429).
 * The checks themselves run off the event loop (async scrypt, PAM's async calls).
 */
import { HostadmError } from '@hostadm/shared/protocol/errors.ts';
import type { Clock } from './context.ts';

export interface SignInGateConfig {
  maxConcurrent: number;
  maxQueued: number;
  burst: number;
  perSecond: number;
}

/** What the gate needs from the blacklist: whether the address is blocked once `pending` running checks fail. */
export interface FailureCounter {
  wouldBlock(address: string, pending: number): boolean;
}

interface Bucket {
  tokens: number;
  at: number;
}

export class SignInGate {
  private running = 0;
  private readonly waiting: Array<() => void> = [];
  private readonly pendingByAddress = new Map<string, number>();
  private readonly buckets = new Map<string, Bucket>();

  private readonly config: SignInGateConfig;
  private readonly clock: Clock;
  private readonly failures: FailureCounter;

  constructor(config: SignInGateConfig, clock: Clock, failures: FailureCounter) {
    this.config = config;
    this.clock = clock;
    this.failures = failures;
  }

  /** Runs `check` for `address` within the bounds, or throws 429 without running it. */
  async run<T>(address: string, check: () => Promise<T>): Promise<T> {
    if (!this.takeToken(address)) throw tooMany('too many sign-in attempts from this address; slow down');
    const pending = this.pendingByAddress.get(address) ?? 0;
    // Failures already counted plus the checks still running for this address: once those alone would
    // block it, this attempt cannot matter except as another guess.
    if (this.failures.wouldBlock(address, pending)) throw tooMany('too many failed sign-ins from this address; try again later');
    if (this.running >= this.config.maxConcurrent && this.waiting.length >= this.config.maxQueued) {
      throw tooMany('too many sign-ins in progress; try again shortly');
    }
    this.pendingByAddress.set(address, pending + 1);
    try {
      await this.turn();
      try {
        return await check();
      } finally {
        this.release();
      }
    } finally {
      const left = (this.pendingByAddress.get(address) ?? 1) - 1;
      if (left > 0) this.pendingByAddress.set(address, left);
      else this.pendingByAddress.delete(address);
    }
  }

  private takeToken(address: string): boolean {
    const now = this.clock.now();
    const bucket = this.buckets.get(address) ?? { tokens: this.config.burst, at: now };
    bucket.tokens = Math.min(this.config.burst, bucket.tokens + ((now - bucket.at) / 1000) * this.config.perSecond);
    bucket.at = now;
    if (bucket.tokens < 1) {
      this.buckets.set(address, bucket);
      return false;
    }
    bucket.tokens -= 1;
    this.buckets.set(address, bucket);
    // Full buckets carry no information: forget them so the map holds only recent attempters.
    if (this.buckets.size > 10_000) this.forgetFullBuckets(now);
    return true;
  }

  private forgetFullBuckets(now: number): void {
    for (const [address, bucket] of this.buckets) {
      if (bucket.tokens + ((now - bucket.at) / 1000) * this.config.perSecond >= this.config.burst) this.buckets.delete(address);
    }
  }

  private turn(): Promise<void> {
    if (this.running < this.config.maxConcurrent) {
      this.running++;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(() => resolve()));
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.running--;
  }
}

function tooMany(message: string): HostadmError {
  return new HostadmError('TOO_MANY_REQUESTS', message);
}
