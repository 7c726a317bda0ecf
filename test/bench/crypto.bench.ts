/**
 * hsc1 channel cost (a measurement, not a test), side by side with node:crypto in the same run, as
 * the performance baselines (§3, crypto) ask: CI is a shared 2-vCPU machine, so compare ratios, and
 * CPU per message (all threads), which load from other processes disturbs less than wall-clock rates.
 *
 * - seal / open / seal+open throughput of SecureChannel (WebCrypto AES-256-GCM + base64 framing) at
 *   200 B and 16 KiB envelopes, one call at a time and with N calls in flight (WebCrypto is async and
 *   runs AES-GCM on libuv's thread pool, so a pipeline is how a busy link actually uses it);
 * - the same framing done synchronously with node:crypto createCipheriv (what the agent could do if it
 *   did not share this code with browsers), and bare node:crypto AES-GCM without framing;
 * - handshake time: client start, agent answer, client finish and C2 verification, RSA-2048 + Ed25519.
 *
 * Env: BENCH_WINDOW_MS (default 600), BENCH_WINDOWS (3), BENCH_INFLIGHT (64), BENCH_HANDSHAKES (30).
 */
import { createCipheriv, createDecipheriv, generateKeyPairSync, randomBytes } from 'node:crypto';
import { answerClientHandshake, generateHostKey, startClientHandshake, type SecureChannel } from '@hostadm/shared/crypto/index.ts';

const WINDOW_MS = Number(process.env.BENCH_WINDOW_MS ?? 600);
const WINDOWS = Number(process.env.BENCH_WINDOWS ?? 3);
const INFLIGHT = Number(process.env.BENCH_INFLIGHT ?? 64);
const HANDSHAKES = Number(process.env.BENCH_HANDSHAKES ?? 30);
const TARGET_MBS = 500;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] ?? NaN;

interface Measured {
  /** Messages per wall-clock second (median window). */
  rate: number;
  /** Process CPU (all threads, so WebCrypto's thread pool too) per message, in µs (median window). */
  cpuUs: number;
}

const cpuNow = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

/** Runs `batch` (which processes `perBatch` messages) repeatedly; medians over the windows. */
async function measure(perBatch: number, batch: () => Promise<void> | void): Promise<Measured> {
  const warmEnd = performance.now() + WINDOW_MS / 3;
  while (performance.now() < warmEnd) await batch();
  const rates: number[] = [];
  const cpus: number[] = [];
  for (let w = 0; w < WINDOWS; w++) {
    let n = 0;
    const c0 = cpuNow();
    const t0 = performance.now();
    while (performance.now() - t0 < WINDOW_MS) {
      await batch();
      n += perBatch;
    }
    rates.push(n / ((performance.now() - t0) / 1000));
    cpus.push((cpuNow() - c0) / n);
  }
  return { rate: median(rates), cpuUs: median(cpus) };
}

function envelopeOfSize(bytes: number): string {
  const head = '{"id":"bench","name":"response","namespace":"rpc","args":"';
  return head + 'x'.repeat(Math.max(0, bytes - head.length - 2)) + '"}';
}

async function channelPair(): Promise<{ client: SecureChannel; agent: SecureChannel }> {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048, publicKeyEncoding: { type: 'spki', format: 'pem' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } });
  const host = await generateHostKey();
  const hs = await startClientHandshake({ clientKeyPem: privateKey, clientSpkiPem: publicKey });
  const agent = await answerClientHandshake({ c1Args: hs.c1Args, clientSpkiPem: publicKey, hostKeyPem: host.privatePkcs8Pem });
  const done = await hs.finish(agent.a1Args, { pinnedHostKey: host.publicRaw });
  return { client: done.channel, agent: agent.channel };
}

/** node:crypto with the same frame layout, synchronous: the ceiling for this framing in Node. */
function nodeFraming() {
  const key = randomBytes(32);
  const aadPrefix = Buffer.concat([Buffer.from('hostadm-hsc1'), randomBytes(16), Buffer.of(1)]);
  let sendSeq = 0n;
  let recvSeq = 0n;
  const seqBuf = (seq: bigint) => {
    const b = Buffer.alloc(8);
    b.writeBigUInt64BE(seq);
    return b;
  };
  return {
    seal(plain: string): string {
      const seq = seqBuf(sendSeq++);
      const c = createCipheriv('aes-256-gcm', key, Buffer.concat([Buffer.alloc(4), seq]));
      c.setAAD(Buffer.concat([aadPrefix, seq]));
      return 'hsc1.' + Buffer.concat([seq, c.update(plain, 'utf8'), c.final(), c.getAuthTag()]).toString('base64');
    },
    open(frame: string): string {
      const body = Buffer.from(frame.slice(5), 'base64');
      const seq = body.subarray(0, 8);
      if (body.readBigUInt64BE(0) !== recvSeq++) throw new Error('seq');
      const d = createDecipheriv('aes-256-gcm', key, Buffer.concat([Buffer.alloc(4), seq]));
      d.setAAD(Buffer.concat([aadPrefix, seq]));
      d.setAuthTag(body.subarray(body.length - 16));
      return Buffer.concat([d.update(body.subarray(8, body.length - 16)), d.final()]).toString('utf8');
    },
    rewind(): void {
      recvSeq = 0n;
    },
  };
}

function bareNodeGcm(plain: Buffer): () => void {
  const key = randomBytes(32);
  const iv = Buffer.alloc(12);
  const aad = randomBytes(37);
  return () => {
    const c = createCipheriv('aes-256-gcm', key, iv);
    c.setAAD(aad);
    const ct = Buffer.concat([c.update(plain), c.final()]);
    const d = createDecipheriv('aes-256-gcm', key, iv);
    d.setAAD(aad);
    d.setAuthTag(c.getAuthTag());
    Buffer.concat([d.update(ct), d.final()]);
  };
}

const rows: ({ what: string; size: number } & Measured)[] = [];
const row = (what: string, size: number, m: Measured) => {
  rows.push({ what, size, ...m });
  const mbs = ((m.rate * size) / 1e6).toFixed(1).padStart(7);
  const perCore = ((size / m.cpuUs)).toFixed(0).padStart(5); // bytes per CPU-µs = MB per CPU-second
  console.log(`${what.padEnd(50)} ${String(size).padStart(6)} B ${Math.round(m.rate).toString().padStart(7)} msg/s ${mbs} MB/s | CPU ${m.cpuUs.toFixed(1).padStart(6)} µs/msg = ${perCore} MB per CPU-s`);
};

console.log(`Node ${process.version}; windows ${WINDOWS} × ${WINDOW_MS} ms, median; ${INFLIGHT} in flight for pipelined rows; MB/s counts envelope bytes`);
const { client, agent } = await channelPair();
for (const size of [200, 16384]) {
  const plain = envelopeOfSize(size);
  const sample = await client.seal(plain);
  if ((await agent.open(sample)) !== plain) throw new Error('round trip failed');

  row('hsc1 seal+open, one at a time', size, await measure(1, async () => {
    await agent.open(await client.seal(plain));
  }));
  row(`hsc1 seal+open, ${INFLIGHT} in flight`, size, await measure(INFLIGHT, async () => {
    const frames = await Promise.all(Array.from({ length: INFLIGHT }, () => client.seal(plain)));
    await Promise.all(frames.map((f) => agent.open(f)));
  }));
  {
    // One side's share: a sender only seals, a receiver only opens. Time each half of a pipelined batch.
    let sealMs = 0;
    let openMs = 0;
    let sealCpu = 0;
    let openCpu = 0;
    let n = 0;
    const end = performance.now() + WINDOW_MS * WINDOWS;
    while (performance.now() < end) {
      const c0 = cpuNow();
      const t0 = performance.now();
      const frames = await Promise.all(Array.from({ length: INFLIGHT }, () => client.seal(plain)));
      const c1 = cpuNow();
      const t1 = performance.now();
      await Promise.all(frames.map((f) => agent.open(f)));
      const t2 = performance.now();
      sealMs += t1 - t0;
      openMs += t2 - t1;
      sealCpu += c1 - c0;
      openCpu += cpuNow() - c1;
      n += INFLIGHT;
    }
    row(`hsc1 seal only, ${INFLIGHT} in flight`, size, { rate: n / (sealMs / 1000), cpuUs: sealCpu / n });
    row(`hsc1 open only, ${INFLIGHT} in flight`, size, { rate: n / (openMs / 1000), cpuUs: openCpu / n });
  }
  const nf = nodeFraming();
  row('node:crypto seal+open, same framing (sync)', size, await measure(50, () => {
    for (let i = 0; i < 50; i++) nf.open(nf.seal(plain));
  }));
  {
    const sealer = nodeFraming();
    row('node:crypto seal only, same framing (sync)', size, await measure(50, () => {
      for (let i = 0; i < 50; i++) sealer.seal(plain);
    }));
    const opener = nodeFraming();
    const frames = Array.from({ length: 50 }, () => opener.seal(plain));
    row('node:crypto open only, same framing (sync)', size, await measure(50, () => {
      opener.rewind(); // reopen the same 50 frames each batch
      for (const f of frames) opener.open(f);
    }));
  }
  row('node:crypto bare AES-256-GCM enc+dec (no base64)', size, await measure(50, (() => {
    const op = bareNodeGcm(Buffer.from(plain));
    return () => {
      for (let i = 0; i < 50; i++) op();
    };
  })()));
}

// Handshake: each step timed separately, sequentially (RSA-2048 private ops dominate).
{
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048, publicKeyEncoding: { type: 'spki', format: 'pem' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } });
  const host = await generateHostKey();
  const steps = { start: [] as number[], answer: [] as number[], finish: [] as number[], verify: [] as number[], total: [] as number[] };
  for (let i = 0; i < HANDSHAKES + 3; i++) {
    const t0 = performance.now();
    const hs = await startClientHandshake({ clientKeyPem: privateKey, clientSpkiPem: publicKey });
    const t1 = performance.now();
    const ag = await answerClientHandshake({ c1Args: hs.c1Args, clientSpkiPem: publicKey, hostKeyPem: host.privatePkcs8Pem, hostPublicRaw: host.publicRaw });
    const t2 = performance.now();
    const done = await hs.finish(ag.a1Args, { pinnedHostKey: host.publicRaw });
    const t3 = performance.now();
    if (!(await ag.verifyC2(done.c2Args))) throw new Error('C2 did not verify');
    const t4 = performance.now();
    if (i < 3) continue; // warm-up
    steps.start.push(t1 - t0);
    steps.answer.push(t2 - t1);
    steps.finish.push(t3 - t2);
    steps.verify.push(t4 - t3);
    steps.total.push(t4 - t0);
  }
  for (const [name, xs] of Object.entries(steps)) {
    console.log(`handshake ${name.padEnd(8)} p50 ${median(xs).toFixed(2)} ms  p90 ${pct(xs, 90).toFixed(2)} ms  (${xs.length} runs)`);
  }
}

const at = (what: string) => rows.find((r) => r.what.startsWith(what) && r.size === 16384) ?? { rate: NaN, cpuUs: NaN };
const mbs = (m: Measured) => (m.rate * 16384) / 1e6;
const perCpu = (m: Measured) => 16384 / m.cpuUs;
const [seal, open, pair] = [at('hsc1 seal only'), at('hsc1 open only'), at(`hsc1 seal+open, ${INFLIGHT}`)];
const [nodeSeal, nodeOpen, nodePair] = [at('node:crypto seal only'), at('node:crypto open only'), at('node:crypto seal+open')];
const met = Math.min(mbs(seal), mbs(open)) >= TARGET_MBS;
console.log(`\ntarget: bulk ≥ ${TARGET_MBS} MB/s at 16 KiB (per side: a sender seals, a receiver opens)`);
console.log(`  wall clock: seal ${mbs(seal).toFixed(0)} MB/s, open ${mbs(open).toFixed(0)} MB/s → ${met ? 'MET' : 'NOT met'} on this machine in this run`);
console.log(`  per CPU-second (load-independent): seal ${perCpu(seal).toFixed(0)}, open ${perCpu(open).toFixed(0)} MB; node:crypto same framing: seal ${perCpu(nodeSeal).toFixed(0)}, open ${perCpu(nodeOpen).toFixed(0)} MB`);
console.log(`  hsc1 / node:crypto, same run: wall seal ${(mbs(seal) / mbs(nodeSeal)).toFixed(2)}×, open ${(mbs(open) / mbs(nodeOpen)).toFixed(2)}×, seal+open ${(mbs(pair) / mbs(nodePair)).toFixed(2)}×; CPU per message seal ${(seal.cpuUs / nodeSeal.cpuUs).toFixed(2)}×, open ${(open.cpuUs / nodeOpen.cpuUs).toFixed(2)}×`);
