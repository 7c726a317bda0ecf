/**
 * The two-stage `auth_ssl` challenge. Stage 1 gives the connection a random test string; stage 2,
 * within the window and on the same connection, must prove a registered key by signing it. A test
 * string is used once, whatever the outcome.
 */
import type { Clock } from './context.ts';
import { randomAlnum } from './sessions.ts';

interface Challenge {
  testString: string;
  issuedAt: number;
}

export class SslChallenges {
  private readonly byConnection = new Map<string, Challenge>();
  private readonly clock: Clock;
  private readonly windowMs: number;

  constructor(clock: Clock, windowSeconds: number) {
    this.clock = clock;
    this.windowMs = windowSeconds * 1000;
  }

  issue(connectionId: string): string {
    const testString = randomAlnum(32);
    this.byConnection.set(connectionId, { testString, issuedAt: this.clock.now() });
    return testString;
  }

  /** The connection's outstanding test string if still inside the window; it is consumed either way. */
  take(connectionId: string): string | null {
    const challenge = this.byConnection.get(connectionId);
    this.byConnection.delete(connectionId);
    if (!challenge) return null;
    return this.clock.now() - challenge.issuedAt <= this.windowMs ? challenge.testString : null;
  }

  forget(connectionId: string): void {
    this.byConnection.delete(connectionId);
  }
}
