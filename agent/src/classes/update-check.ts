/**
 * `checkupdates` as the original answered it, without its false "up to date": the cached result of
 * the last check while it is fresh (12 hours), else a check started in the background. A request
 * waits a little for that check, so a quick one answers at once and a slow one answers
 * `checkingforupdates` (ask again). A check that fails is cached as `checkfailed` with its reason
 * (trueos-core#229: offline must not read as "no updates"), and only for five minutes; every
 * platform command of a check has a timeout, so a check cannot stay "checking" forever
 * (trueos-core#334/#338).
 */
import { toHostadmError } from '@hostadm/shared/protocol/errors.ts';
import type { StoredCheck, UpdateCheck, UpdatePort } from '../platforms/ports/update.ts';
import type { Clock } from '../server/context.ts';

export const FRESH_CHECK_MS = 12 * 3600_000;
export const FRESH_FAILURE_MS = 5 * 60_000;
/** How long a request waits for a check it started before answering `checkingforupdates`. */
const ANSWER_WAIT_MS = 2000;

/** `patches` become the wire's `patch0`, `patch1`, ... beside the other records. */
function toWire(check: UpdateCheck) {
  const { patches = [], ...rest } = check;
  const keyed: Record<string, NonNullable<UpdateCheck['patches']>[number]> = {};
  patches.forEach((patch, i) => (keyed[`patch${i}`] = patch));
  return Object.assign(keyed, rest);
}

export interface CheckReply {
  last_check: string;
  checkupdates: ReturnType<typeof toWire>;
}

const reply = (lastCheck: string, check: UpdateCheck): CheckReply => ({ last_check: lastCheck, checkupdates: toWire(check) });

export class UpdateChecker {
  private running: Promise<void> | null = null;
  private readonly port: UpdatePort;
  private readonly clock: Clock;

  constructor(port: UpdatePort, clock: Clock) {
    this.port = port;
    this.clock = clock;
  }

  get checking(): boolean {
    return this.running !== null;
  }

  /**
   * The answer to `checkupdates`: `updaterunning` and `rebootrequired` come before any cached result,
   * since they say what the host is doing now.
   */
  async answer(force: boolean, runningUpdate: string | null): Promise<CheckReply> {
    const cached = await this.port.store.readCheck();
    const lastCheck = cached ? new Date(cached.at).toISOString() : '';
    if (runningUpdate !== null) {
      return reply(lastCheck, { status: 'updaterunning', details: `An update is running (job ${runningUpdate}).` });
    }
    const reboot = await this.port.rebootRequired();
    if (reboot !== null) return reply(lastCheck, { status: 'rebootrequired', details: reboot });
    if (force || !this.isFresh(cached)) this.start();
    if (this.running) await Promise.race([this.running, delay(ANSWER_WAIT_MS)]);
    if (this.running) return reply(lastCheck, { status: 'checkingforupdates', details: 'Checking for updates.' });
    const done = await this.port.store.readCheck();
    if (!done) return reply('', { status: 'checkfailed', details: 'No check has completed.' });
    return reply(new Date(done.at).toISOString(), done.result);
  }

  /** The last completed check that found something to install, for planning `standalone`. */
  async lastResult(): Promise<UpdateCheck | null> {
    const cached = await this.port.store.readCheck();
    return cached && cached.result.status !== 'checkfailed' ? cached.result : null;
  }

  private isFresh(cached: StoredCheck | null): boolean {
    if (!cached) return false;
    const age = this.clock.now() - cached.at;
    return age >= 0 && age < (cached.result.status === 'checkfailed' ? FRESH_FAILURE_MS : FRESH_CHECK_MS);
  }

  /** Starts a check unless one is running; its result (or failure) is stored when it ends. */
  private start(): void {
    if (this.running) return;
    const controller = new AbortController();
    this.running = this.port
      .check(controller.signal)
      .then(
        (result): StoredCheck => ({ at: this.clock.now(), result }),
        (err: unknown): StoredCheck => ({
          at: this.clock.now(),
          result: { status: 'checkfailed', details: `The check failed: ${toHostadmError(err).message}` },
        }),
      )
      .then((stored) => this.port.store.writeCheck(stored))
      .catch(() => undefined)
      .finally(() => {
        this.running = null;
      });
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
