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

/**
 * What the gate needs from the blacklist: whether the address is blocked once the checks under way
 * fail, and a reservation per check that a success releases and a recorded failure consumes.
 */
export interface FailureCounter {
  wouldBlock(address: string): boolean;
  reserve(address: string): void;
  release(address: string): void;
}

interface Bucket {
  tokens: number;
  at: number;
}

export class SignInGate {
  private running = 0;
  private readonly waiting: Array<() => void> = [];
  private readonly buckets = new Map<string, Bucket>();

  private readonly config: SignInGateConfig;
  private readonly clock: Clock;
  private readonly failures: FailureCounter;

  constructor(config: SignInGateConfig, clock: Clock, failures: FailureCounter) {
    this.config = config;
    this.clock = clock;
    this.failures = failures;
  }

  /**
   * Runs the password check for `address`, or throws 429 without running it. A failed check stays
   * reserved in the blacklist until the caller records the failure, so no guess slips in between.
   */
  async run(address: string, check: () => Promise<boolean>): Promise<boolean> {
    if (!this.takeToken(address)) throw tooMany('too many sign-in attempts from this address; slow down');
    if (this.failures.wouldBlock(address)) throw tooMany('too many failed sign-ins from this address; try again later');
    if (this.running >= this.config.maxConcurrent && this.waiting.length >= this.config.maxQueued) {
      throw tooMany('too many sign-ins in progress; try again shortly');
    }
    this.failures.reserve(address);
    let ok = false;
    try {
      await this.turn();
      try {
        ok = await check();
      } finally {
        this.release();
      }
    } finally {
      if (ok) this.failures.release(address);
    }
    return ok;
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
