/**
 * Memory per idle, signed-in agent on the Node bridge against a bare `ws` server's plain socket, in
 * the same run (a measurement, not a test). The bridge (bridge-role.ts, started with the V8 flags of
 * client/bin/hostadm as `hostadm bridge` is) and the bare server (relay-helpers.ts's echo server) each
 * run in their own process; this one holds the agents and sockets. After a warm-up (the sign-in path's
 * optimized code and first allocations are not per-connection costs), each round opens
 * BENCH_IDLE_AGENTS more Ed25519 agents that sign in and list a key on the bridge, then as many
 * plain sockets on the bare server, and reads each process's RSS and heap after memory-reducing
 * collections before and after: each round gives one ratio of the two growths, whose spread says
 * how far the readings wander (RSS most, on a shared machine). The first round is printed but not
 * counted in the targets: it is off for both sides for reasons that are not per-connection costs (the
 * bare server's heap still has room the warm-up grew, so its sockets seem to cost ~40% less; the
 * bridge's includes code V8 optimizes for the sign-in path meanwhile), where later rounds agree.
 *
 * Idle agents on the bridge are parked once quiet for `parkQuietSeconds` (5 s; runtime/node/parking.ts):
 * every reading of the bridge waits until all its agents are parked (the metrics' `parking.parked`),
 * so what is measured is an idle agent's steady state, not one still holding its sign-in's sockets.
 *
 * Env: BENCH_IDLE_AGENTS (500 per round), BENCH_MEMORY_ROUNDS (4, the first not counted), BENCH_PARK_QUIET_SECONDS (0: never
 * park, for the figure without it), BENCH_HEAP_SNAPSHOTS=DIR (also write
 * the bridge's heap snapshots after the warm-up and after the last round there: compare them with
 * `node test/bench/heap-diff.ts DIR/before.heapsnapshot DIR/after.heapsnapshot N`).
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type WebSocket from 'ws';
import { reportTarget, summarize } from './ab-pairs.ts';
import { roleBridge } from './bridge-role.ts';
import { bridgeSignIn, launcherV8Flags, makeKey, open, roleEchoServer, spawnRole, type Child } from './relay-helpers.ts';

const IDLE_AGENTS = Number(process.env.BENCH_IDLE_AGENTS ?? 500);
const WARM_AGENTS = 100;
const MEMORY_ROUNDS = Math.max(2, Number(process.env.BENCH_MEMORY_ROUNDS ?? 4));
const SNAPSHOTS = process.env.BENCH_HEAP_SNAPSHOTS;
const self = fileURLToPath(import.meta.url);

type Mem = { mem: { rss: number; heap: number } };
type Metrics = { metrics: { connections: { agent: number }; parking: { parked: number } } };
const PARKING = process.env.BENCH_PARK_QUIET_SECONDS !== '0';

async function parent(): Promise<void> {
  const started = performance.now();
  const children: Child[] = [];
  try {
    const echo = spawnRole(self, 'echo-server');
    children.push(echo);
    const echoPort = (await echo.next<{ port: number }>()).port;
    const bridge = spawnRole(self, 'bridge', [], launcherV8Flags());
    children.push(bridge);
    const bridgeUrl = (await bridge.next<{ url: string }>()).url;

    const tokens = (await bridge.ask<{ tokens: string[] }>({ cmd: 'tokens', kind: 'agent', n: MEMORY_ROUNDS * IDLE_AGENTS + WARM_AGENTS })).tokens;
    const keys = tokens.map(() => makeKey('ed25519'));
    const agents: WebSocket[] = [];
    const connectMany = async (from: number, to: number) => {
      for (let i = from; i < to; i += 50) {
        const batch = [];
        for (let j = i; j < Math.min(to, i + 50); j++) batch.push(bridgeSignIn(bridgeUrl, 'server', keys[j]!, tokens[j]!, [`bench-user-key-${j % 10}`]));
        for (const { ws } of await Promise.all(batch)) agents.push(ws);
      }
    };
    const bare: WebSocket[] = [];
    const openBare = async (n: number) => {
      for (let i = 0; i < n; i += 100)
        bare.push(...(await Promise.all(Array.from({ length: Math.min(100, n - i) }, () => open(`ws://127.0.0.1:${echoPort}`)))));
    };
    /** Until every agent on the bridge is parked (when parking is on), at most 60 s. */
    const allParked = async () => {
      const deadline = Date.now() + 60_000;
      for (;;) {
        const { metrics } = await bridge.ask<Metrics>({ cmd: 'metrics' });
        if (!PARKING || metrics.parking.parked === metrics.connections.agent) return;
        if (Date.now() > deadline) throw new Error(`only ${metrics.parking.parked} of ${metrics.connections.agent} agents parked after 60 s`);
        await new Promise((r) => setTimeout(r, 500));
      }
    };
    await connectMany(0, WARM_AGENTS);
    await openBare(WARM_AGENTS);
    await allParked();
    await new Promise((r) => setTimeout(r, 300));
    const snapshot = async (name: string) => {
      if (SNAPSHOTS) console.log(`heap snapshot: ${(await bridge.ask<{ written: string }>({ cmd: 'snapshot', path: join(SNAPSHOTS, name) })).written}`);
    };
    await snapshot('before.heapsnapshot');

    const perAgent: Array<{ rss: number; heap: number; bareRss: number; bareHeap: number }> = [];
    for (let round = 0; round < MEMORY_ROUNDS; round++) {
      const from = WARM_AGENTS + round * IDLE_AGENTS;
      const before = (await bridge.ask<Mem>({ cmd: 'mem' })).mem;
      await connectMany(from, from + IDLE_AGENTS);
      await allParked();
      await new Promise((r) => setTimeout(r, 500));
      const after = (await bridge.ask<Mem>({ cmd: 'mem' })).mem;
      const bareBefore = (await echo.ask<Mem>({ cmd: 'mem' })).mem;
      await openBare(IDLE_AGENTS);
      await new Promise((r) => setTimeout(r, 500));
      const bareAfter = (await echo.ask<Mem>({ cmd: 'mem' })).mem;
      const per = (a: number, b: number) => (a - b) / IDLE_AGENTS / 1024;
      perAgent.push({
        rss: per(after.rss, before.rss),
        heap: per(after.heap, before.heap),
        bareRss: per(bareAfter.rss, bareBefore.rss),
        bareHeap: per(bareAfter.heap, bareBefore.heap),
      });
    }
    await snapshot('after.heapsnapshot');
    const { metrics: final } = await bridge.ask<Metrics>({ cmd: 'mem' });
    const agentsNow = final.connections.agent;
    const kib = (xs: number[]) => xs.map((x) => x.toFixed(1)).join(' / ');
    console.log(
      `memory per idle signed-in agent on the bridge (${agentsNow} agents, ${final.parking.parked} parked, ${MEMORY_ROUNDS} rounds of ${IDLE_AGENTS}): RSS ${kib(perAgent.map((p) => p.rss))} KiB, heap ${kib(perAgent.map((p) => p.heap))} KiB` +
        `   (bare ws server per socket: RSS ${kib(perAgent.map((p) => p.bareRss))} KiB, heap ${kib(perAgent.map((p) => p.bareHeap))} KiB)`,
    );
    const counted = perAgent.slice(1);
    reportTarget('Memory: bridge RSS per idle agent vs a bare ws server, per round after the first', summarize(counted.map((p) => p.rss / p.bareRss)), 1.0);
    reportTarget('Memory: bridge heap per idle agent vs a bare ws server, per round after the first', summarize(counted.map((p) => p.heap / p.bareHeap)), 1.0);
    for (const ws of [...agents, ...bare]) ws.terminate();
    bridge.proc.send({ cmd: 'stop' });
    await new Promise((r) => bridge.proc.once('exit', r));
    console.log(`(bench took ${((performance.now() - started) / 1000).toFixed(0)} s)`);
  } finally {
    for (const c of children) if (c.proc.exitCode === null) c.proc.kill('SIGTERM');
  }
}

const [role] = process.argv.slice(2);
if (role) process.on('SIGTERM', () => process.exit(0));
switch (role) {
  case 'echo-server':
    await roleEchoServer();
    break;
  case 'bridge':
    await roleBridge();
    break;
  default:
    await parent();
    process.exit(0);
}
