/**
 * Dispatcher throughput and event latency (a measurement, not a test):
 * - jobs/s through `dispatcher run` for a trivial command (`true`, really run: the sim agent here has
 *   host commands on), with the default parallelism, against raw `spawn` of the same command with the
 *   same parallelism in the same run (their ratio is what the dispatcher's bookkeeping costs);
 * - round trip from `run` request to the job's completion event;
 * - event latency from publish in the agent to receipt by a subscribed WebSocket client.
 */
import { startTestAgent, TestClient, type Envelope } from '../helpers/agent.ts';
import { EVERYONE } from '@hostadm/agent/events/audience.ts';
import { spawn } from 'node:child_process';

const JOBS = Number(process.env.BENCH_JOBS ?? 300);
const ROUND_TRIPS = Number(process.env.BENCH_ROUND_TRIPS ?? 50);
const EVENTS = Number(process.env.BENCH_EVENTS ?? 2000);

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
const payload = (e: Envelope) => (e.args as { args: Record<string, unknown> }).args;

const PARALLEL = 4;

/** `count` runs of `true` through child_process.spawn, at most PARALLEL at once: jobs/s. */
async function rawSpawnRate(count: number): Promise<number> {
  const start = performance.now();
  let started = 0;
  const worker = async () => {
    while (started < count) {
      started++;
      await new Promise<void>((resolve, reject) =>
        spawn('true', [], { stdio: 'ignore' })
          .once('close', () => resolve())
          .once('error', reject),
      );
    }
  };
  await Promise.all(Array.from({ length: PARALLEL }, worker));
  return count / ((performance.now() - start) / 1000);
}

const agent = await startTestAgent({ dispatcher: { retentionSeconds: 3600 }, simHostCommands: true });
const client = await TestClient.connect(agent.url);
await client.login('admin');
await client.request('events', 'subscribe', ['dispatcher']);

// Throughput: submit in batches of 50 ids per request; wait for every completion event.
const finished = new Set<string>();
client.ws.on('message', (data) => {
  const env = JSON.parse(data.toString()) as Envelope;
  if (env.name === 'event') {
    const p = payload(env);
    if (p.state === 'finished' && typeof p.proc_id === 'string') finished.add(p.proc_id);
  }
});
let t0 = performance.now();
// Keep at most 150 jobs outstanding so the queue bound (200 pending) never refuses a batch.
for (let b = 0; b < JOBS / 50; b++) {
  while (b * 50 - finished.size > 100) await new Promise((r) => setTimeout(r, 2));
  const args: Record<string, string> = { action: 'run' };
  for (let i = 0; i < 50; i++) args[`tp-${b}-${i}`] = 'true';
  const reply = await client.request('rpc', 'dispatcher', args);
  if (reply.name !== 'response') throw new Error(`run refused: ${JSON.stringify(reply.args)}`);
}
while (finished.size < JOBS) await new Promise((r) => setTimeout(r, 5));
const seconds = (performance.now() - t0) / 1000;
const spawnRate = await rawSpawnRate(JOBS);
console.log(
  `throughput: ${JOBS} jobs of \`true\` in ${seconds.toFixed(2)} s = ${(JOBS / seconds).toFixed(1)} jobs/s (no_queue parallelism ${PARALLEL}); raw spawn of \`true\`, ${PARALLEL} at a time: ${spawnRate.toFixed(1)} jobs/s; dispatcher / raw spawn = ${(JOBS / seconds / spawnRate).toFixed(2)}×`,
);

// Request-to-completion round trip, one job at a time.
const rtts: number[] = [];
for (let i = 0; i < ROUND_TRIPS; i++) {
  const id = `rt-${i}`;
  t0 = performance.now();
  await client.request('rpc', 'dispatcher', { action: 'run', [id]: 'true' });
  while (!finished.has(id)) await new Promise((r) => setImmediate(r));
  rtts.push(performance.now() - t0);
}
rtts.sort((a, b) => a - b);
console.log(`run → completion event: p50 ${pct(rtts, 50).toFixed(2)} ms, p99 ${pct(rtts, 99).toFixed(2)} ms (${ROUND_TRIPS} jobs)`);

// Pure event delivery latency: publish in the agent, receive on the socket.
const lat: number[] = [];
await new Promise<void>((resolve) => {
  let got = 0;
  client.ws.on('message', (data) => {
    const env = JSON.parse(data.toString()) as Envelope;
    const p = env.name === 'event' ? payload(env) : null;
    if (p && typeof p.bench_sent === 'number') {
      lat.push(performance.now() - p.bench_sent);
      if (++got === EVENTS) resolve();
    }
  });
  let sent = 0;
  const tick = () => {
    for (let i = 0; i < 20 && sent < EVENTS; i++, sent++) agent.services.events.publish('dispatcher', { bench_sent: performance.now() }, EVERYONE);
    if (sent < EVENTS) setImmediate(tick);
  };
  tick();
});
lat.sort((a, b) => a - b);
console.log(`event publish → client receipt: p50 ${pct(lat, 50).toFixed(3)} ms, p99 ${pct(lat, 99).toFixed(3)} ms (${EVENTS} events)`);

client.close();
await agent.dispose();
