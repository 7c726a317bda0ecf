/** Helpers for the SDK tests: an agent per test, clients with sockets the test can drop or stall. */
import type { TestContext } from 'node:test';
import WebSocket from 'ws';
import { startTestAgent, SIM_PASSWORD, type TestAgent } from '../helpers/agent.ts';
import { connect, type ConnectOptions, type HostadmClient, type WebSocketConstructor } from '../../client/sdk/src/node.ts';

export { SIM_PASSWORD };

export async function agentFor(t: TestContext, overrides: Parameters<typeof startTestAgent>[0] = {}): Promise<TestAgent> {
  const agent = await startTestAgent(overrides);
  t.after(() => agent.dispose());
  return agent;
}

/** `ws` sockets the test can reach: drop one (`terminate`), or hold its outgoing frames. */
export class Sockets {
  readonly all: ControlledSocket[] = [];
  readonly ctor: WebSocketConstructor;

  constructor() {
    const all = this.all;
    class Recorded extends WebSocket implements ControlledSocket {
      holding = false;
      readonly held: string[] = [];
      constructor(url: string) {
        super(url);
        all.push(this);
      }
      override send(data: string): void {
        if (this.holding) this.held.push(data);
        else super.send(data);
      }
      release(): void {
        this.holding = false;
        for (const frame of this.held.splice(0)) super.send(frame);
      }
    }
    this.ctor = Recorded as unknown as WebSocketConstructor;
  }

  get last(): ControlledSocket {
    const s = this.all.at(-1);
    if (!s) throw new Error('no socket yet');
    return s;
  }
}

export interface ControlledSocket {
  holding: boolean;
  readonly held: string[];
  release(): void;
  terminate(): void;
}

export async function clientFor(t: TestContext, agent: TestAgent, options: Partial<ConnectOptions> = {}): Promise<HostadmClient> {
  const client = await connect({
    url: agent.url,
    auth: { username: 'admin', password: SIM_PASSWORD },
    validateReplies: true,
    ...options,
  });
  t.after(() => client.close());
  return client;
}

/** Resolves when `predicate` holds, polling; rejects after `ms`. */
export async function until(predicate: () => boolean, ms = 5000, what = 'condition'): Promise<void> {
  const end = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** identify's reply from the sim agent (other fields, such as a host key, may come along). */
export function assertIdentify(reply: unknown): void {
  const r = reply as { type?: unknown; hostname?: unknown };
  if (r.type !== 'server' || r.hostname !== 'simhost') throw new Error(`unexpected identify reply: ${JSON.stringify(reply)}`);
}
