/**
 * What the two ends of an hsc3 channel cost per round trip, without sockets, a relay or other
 * processes (a profiling tool, not a bench or a test): the load client's and the echo agent's
 * ChannelSenders in this one process, each sealed frame copied and masked as `ws` sends it
 * (bufferutil, into a new buffer), unmasked, opened, its envelopes resealed by the other side, the
 * echoes opened. On a shared machine the relay bench's per-process CPU swings by ±20 % from run to run;
 * this isolates the channel's own work, with its allocations and the GC they cause.
 *
 * Two variants in alternating windows of BENCH_WINDOW_MS: `new frames` (a new buffer per sealed frame:
 * the SDK) and `released frames` (each frame handed back once "sent", as the agent's link does in
 * `ws`'s send callback: channel-frame-pool.ts). Prints the median CPU µs per round trip of each and
 * the per-window ratios.
 *
 * Run: node test/bench/channel-ends-profile.ts   Env: BENCH_WINDOW_MS (400), PROFILE_SIZE (16384), PROFILE_WINDOWS (12).
 */
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { ChannelSender, openBinaryBody, SecureChannel } from '@hostadm/shared/crypto/index.ts';

const SIZE = Number(process.env.PROFILE_SIZE ?? 16384);
const WINDOW_MS = Number(process.env.BENCH_WINDOW_MS ?? 400);
const WINDOWS = Number(process.env.PROFILE_WINDOWS ?? 12);
/** As many envelopes as one hsc3 record takes at this size (the sender's 48 KiB bound). */
const PER_BURST = Math.max(1, Math.floor((48 * 1024) / SIZE));

const requireWs = createRequire(createRequire(import.meta.url).resolve('ws'));
const bufferUtil = requireWs('bufferutil') as {
  mask(source: Buffer, mask: Buffer, output: Buffer, offset: number, length: number): void;
  unmask(buffer: Buffer, mask: Buffer): void;
};
const MASK = Buffer.from([0x12, 0x34, 0x56, 0x78]);
const WS_HEADER = 8;

/** `ws` (a client) sending a frame it did not make: a new buffer, the frame masked into it. */
function wsSend(frame: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(frame.length + WS_HEADER);
  bufferUtil.mask(frame as Buffer, MASK, out, WS_HEADER, frame.length);
  return out;
}

function received(wire: Buffer, headLength: number): Uint8Array {
  const body = wire.subarray(WS_HEADER);
  bufferUtil.unmask(body, MASK);
  return body.subarray(headLength);
}

async function channels(): Promise<{ client: SecureChannel; agent: SecureChannel }> {
  const secrets = () => ({ kC2a: Uint8Array.from(keys.kC2a), kA2c: Uint8Array.from(keys.kA2c), sid: Uint8Array.from(keys.sid) });
  const keys = { kC2a: randomBytes(32), kA2c: randomBytes(32), sid: randomBytes(16) };
  return {
    client: await SecureChannel.create('client', secrets(), { version: 'hsc3' }),
    agent: await SecureChannel.create('agent', secrets(), { version: 'hsc3' }),
  };
}

/** One burst each way; returns the round trips it made. */
async function variant(releases: boolean): Promise<() => number> {
  const { client, agent } = await channels();
  const head = Buffer.from('agent-00000000-0000-0000-0000-000000000000\n');
  const toAgent: Buffer[] = [];
  const toClient: Buffer[] = [];
  const output = (queue: Buffer[]) => ({
    text: () => {
      throw new Error('a text frame on hsc3');
    },
    failed: (cause: unknown) => {
      throw cause;
    },
    releasesFrames: releases,
    binary: (frame: Uint8Array, release?: () => void) => {
      queue.push(wsSend(frame));
      if (release) queueMicrotask(release); // ws's send callback comes after the write, never sooner
    },
  });
  const clientSender = new ChannelSender(client, head, output(toAgent));
  const agentSender = new ChannelSender(agent, head, output(toClient));
  const filler = 'x'.repeat(SIZE);
  let n = 0;
  return () => {
    for (let i = 0; i < PER_BURST; i++) clientSender.send(`${String(n++).padEnd(12, ' ')}${filler.slice(12)}`);
    clientSender.flush();
    for (const wire of toAgent.splice(0)) for (const text of openBinaryBody(agent, received(wire, head.length)) as string[]) agentSender.send(text);
    agentSender.flush();
    for (const wire of toClient.splice(0)) {
      for (const text of openBinaryBody(client, received(wire, head.length)) as string[]) if (text.length !== SIZE) throw new Error('a wrong echo');
    }
    return PER_BURST;
  };
}

const variants = { 'new frames': await variant(false), 'released frames': await variant(true) };
const cpu: Record<keyof typeof variants, number[]> = { 'new frames': [], 'released frames': [] };
for (let w = 0; w < WINDOWS; w++) {
  const order = (w % 2 === 0 ? ['new frames', 'released frames'] : ['released frames', 'new frames']) as Array<keyof typeof variants>;
  for (const name of order) {
    const burst = variants[name];
    const start = process.cpuUsage();
    const t0 = performance.now();
    let roundTrips = 0;
    while (performance.now() - t0 < WINDOW_MS) {
      roundTrips += burst();
      await null; // the released buffers go back (microtasks), as between two socket reads
    }
    const used = process.cpuUsage(start);
    cpu[name].push((used.user + used.system) / roundTrips);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ratios = cpu['released frames'].map((c, w) => c / cpu['new frames'][w]!);
console.log(
  `hsc3 channel ends, ${SIZE} B envelopes, ${PER_BURST} per record, CPU µs per round trip (medians of ${WINDOWS} windows): ` +
    `new frames ${median(cpu['new frames']).toFixed(1)}, released frames ${median(cpu['released frames']).toFixed(1)}; ` +
    `released / new ${median(ratios).toFixed(2)}× (windows: ${ratios.map((r) => r.toFixed(2)).join(' ')})`,
);
