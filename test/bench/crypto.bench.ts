/**
 * hsc1 channel cost (a measurement, not a test), side by side with node:crypto in the same run, as
 * the performance baselines (§3, crypto) ask: CI is a shared 2-vCPU machine, so compare ratios, and
 * CPU per message (all threads), which load from other processes disturbs less than wall-clock rates.
 *
 * - seal / open / seal+open throughput of SecureChannel (AES-256-GCM through shared/src/crypto/aead.ts:
 *   node:crypto with a KeyObject in Node, WebCrypto elsewhere; rows marked "WebCrypto engine" force
 *   the latter, what browsers and Workers run; + base64 framing) at
 *   200 B and 16 KiB envelopes, one call at a time and with N calls in flight (WebCrypto is async and
 *   runs AES-GCM on libuv's thread pool, so a pipeline is how a busy link actually uses it);
 * - bare WebCrypto AES-256-GCM without framing, N in flight: the ceiling of the WebCrypto hot path;
 * - the same framing done synchronously with node:crypto createCipheriv (what the agent could do if it
 *   did not share this code with browsers), and bare node:crypto AES-GCM without framing: Node's
 *   AES-GCM ceiling (below the CPU's: the AEAD block sets it against the system's `openssl speed`).
 *   Keys are KeyObjects: on Node 24.21 createCipheriv with a raw Buffer key costs ~20 µs more per call
 *   (its isKeyObject/isCryptoKey brand checks throw and catch an error, capturing a stack trace, for
 *   every non-KeyObject key), which halves 16 KiB throughput; one row shows that for reference;
 * - AEAD choices at hsc3's record size: AES-128-GCM and ChaCha20-Poly1305 against the AES-256-GCM the
 *   channel runs, and the system's OpenSSL on the same AES-256-GCM (information, not a target);
 * - handshake time: client start, agent answer, client finish and C2 verification, RSA-2048 + Ed25519.
 *
 * CPU columns: the whole process (all threads) and the main thread alone. WebCrypto runs AES on the
 * thread pool, but its per-call work (argument checks, copies, job dispatch, promises) and the base64
 * framing run on the main thread, so `size / main-thread µs` bounds what one side can reach.
 *
 * Env: BENCH_WINDOW_MS (default 600), BENCH_WINDOWS (6), BENCH_INFLIGHT (64), BENCH_HANDSHAKES (30).
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import {
  answerClientHandshake,
  BINARY_CHANNEL_VERSIONS,
  ChannelSender,
  FLUSH_BYTES as RECORD_BYTES,
  generateHostKey,
  startClientHandshake,
  type SecureChannel,
} from '@hostadm/shared/crypto/index.ts';
import { formatRatio, reportTarget, summarize } from './ab-pairs.ts';
import {
  bareNodeAeadEncrypt,
  bareNodeGcm,
  bareNodeGcmDecrypt,
  bareWebCrypto,
  channelPair,
  cpuNow,
  envelopeOfSize,
  INFLIGHT,
  mainNow,
  measure,
  median,
  nodeFraming,
  systemOpensslMBs,
  webCryptoPair,
  WINDOW_MS,
  WINDOWS,
  type Measured,
  type NodeAead,
} from './crypto-helpers.ts';

const HANDSHAKES = Number(process.env.BENCH_HANDSHAKES ?? 30);
const TARGET_MBS = 500;

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] ?? NaN;

const rows: ({ what: string; size: number } & Measured)[] = [];
const row = (what: string, size: number, m: Measured) => {
  rows.push({ what, size, ...m });
  const mbs = ((m.rate * size) / 1e6).toFixed(1).padStart(7);
  const perCore = (size / m.cpuUs).toFixed(0).padStart(5); // bytes per CPU-µs = MB per CPU-second
  console.log(
    `${what.padEnd(52)} ${String(size).padStart(6)} B ${Math.round(m.rate).toString().padStart(7)} msg/s ${mbs} MB/s | CPU ${m.cpuUs.toFixed(1).padStart(6)} µs/msg = ${perCore} MB per CPU-s | main thread ${m.mainUs.toFixed(1).padStart(6)} µs/msg`,
  );
};

console.log(
  `Node ${process.version} (OpenSSL ${process.versions.openssl}), UV_THREADPOOL_SIZE ${process.env.UV_THREADPOOL_SIZE ?? '4 (default)'}; ` +
    `windows ${WINDOWS} × ${WINDOW_MS} ms, median; ${INFLIGHT} in flight for pipelined rows; MB/s counts envelope bytes`,
);
/**
 * One side's share (a sender only seals, a receiver only opens), cells interleaved window by window so
 * that load from other processes hits them alike. `prepare` (untimed) makes each batch's input.
 */
interface Cell {
  what: string;
  perBatch: number;
  prepare?: () => Promise<unknown>;
  // biome-ignore lint/suspicious/noConfusingVoidType: a case may be synchronous and return nothing
  run: (input: unknown) => Promise<unknown> | void;
}
/** Per cell and window: rate, CPU and main-thread µs per message (window order alternates, so pairs are AB then BA). */
type Windows = Array<{ rates: number[]; cpus: number[]; mains: number[] }>;
async function interleaved(size: number, cells: Cell[]): Promise<Windows> {
  const acc: Windows = cells.map(() => ({ rates: [] as number[], cpus: [] as number[], mains: [] as number[] }));
  for (let w = 0; w <= WINDOWS; w++) {
    const order = [...cells.entries()];
    if (w % 2 === 1) order.reverse();
    for (const [i, cell] of order) {
      let [ms, cpu, main, n] = [0, 0, 0, 0];
      const end = performance.now() + (w === 0 ? WINDOW_MS / 3 : WINDOW_MS); // window 0 warms up
      while (performance.now() < end) {
        const input = await cell.prepare?.();
        const [c0, m0, t0] = [cpuNow(), mainNow(), performance.now()];
        await cell.run(input);
        [ms, cpu, main, n] = [ms + performance.now() - t0, cpu + cpuNow() - c0, main + mainNow() - m0, n + cell.perBatch];
      }
      if (w > 0) [acc[i]!.rates.push(n / (ms / 1000)), acc[i]!.cpus.push(cpu / n), acc[i]!.mains.push(main / n)];
    }
  }
  for (const [i, cell] of cells.entries()) row(cell.what, size, { rate: median(acc[i]!.rates), cpuUs: median(acc[i]!.cpus), mainUs: median(acc[i]!.mains) });
  return acc;
}

const { client, agent } = await channelPair();
const webSealPair = await webCryptoPair();
const webOpenPair = await webCryptoPair();
// The per-side cells use pairs of their own: frames sealed and never opened put a pair out of step.
const sealPair = await channelPair();
const openPair = await channelPair();
const hsc2SealPair = await channelPair(true);
const hsc2OpenPair = await channelPair(true);
const hsc3SealPair = await channelPair(BINARY_CHANNEL_VERSIONS);
const hsc3OpenPair = await channelPair(BINARY_CHANNEL_VERSIONS);
/** hsc3 as the SDK and the agent run it: the product's sender, 50 envelopes sent in one tick, then flushed. */
const hsc3Records: Uint8Array[] = [];
const senderOf = (channel: SecureChannel, out: Uint8Array[] | null) =>
  new ChannelSender(channel, new Uint8Array(0), {
    text: () => undefined,
    binary: (frame) => out?.push(frame),
    failed: (cause) => {
      throw cause;
    },
  });
const hsc3Sealer = senderOf(hsc3SealPair.client, null);
const hsc3Preparer = senderOf(hsc3OpenPair.client, hsc3Records);
/** Bulk targets (16 KiB): per-window ratios of a channel cell's rate to bare AES-GCM's, filled below. */
const bulk: Array<{ target: string; ratios: number[] }> = [];
for (const size of [200, 16384]) {
  const plain = envelopeOfSize(size);
  const sample = await client.seal(plain);
  if ((await agent.open(sample)) !== plain) throw new Error('round trip failed');

  row(
    'hsc1 seal+open, one at a time',
    size,
    await measure(1, async () => {
      await agent.open(await client.seal(plain));
    }),
  );
  row(
    `hsc1 seal+open, ${INFLIGHT} in flight`,
    size,
    await measure(INFLIGHT, async () => {
      const frames = await Promise.all(Array.from({ length: INFLIGHT }, () => client.seal(plain)));
      await Promise.all(frames.map((f) => agent.open(f)));
    }),
  );
  const nf = nodeFraming();
  row(
    'node:crypto seal+open, same framing (sync)',
    size,
    await measure(50, () => {
      for (let i = 0; i < 50; i++) nf.open(nf.seal(plain));
    }),
  );

  const bytes = Buffer.from(plain);
  const wc = await bareWebCrypto(bytes);
  const sealer = nodeFraming();
  const opener = nodeFraming();
  const nodeFrames = Array.from({ length: 50 }, () => opener.seal(plain));
  const [gcmKeyObject, gcmBufferKey, gcmDecrypt] = [bareNodeGcm(bytes, false), bareNodeGcm(bytes, false, randomBytes(32)), bareNodeGcmDecrypt(bytes)];
  const fifty = (op: () => void) => () => {
    for (let i = 0; i < 50; i++) op();
  };
  const hsc2Frames: Uint8Array[] = [];
  const cells: Cell[] = [
    {
      what: `hsc1 seal only, ${INFLIGHT} in flight`,
      perBatch: INFLIGHT,
      run: () => Promise.all(Array.from({ length: INFLIGHT }, () => sealPair.client.seal(plain))),
    },
    {
      what: `hsc1 open only, ${INFLIGHT} in flight`,
      perBatch: INFLIGHT,
      prepare: () => Promise.all(Array.from({ length: INFLIGHT }, () => openPair.client.seal(plain))),
      run: (frames) => Promise.all((frames as string[]).map((f) => openPair.agent.open(f))),
    },
    {
      what: `hsc1 seal only, WebCrypto engine, ${INFLIGHT} in flight`,
      perBatch: INFLIGHT,
      run: () => Promise.all(Array.from({ length: INFLIGHT }, () => webSealPair.client.seal(plain))),
    },
    {
      what: `hsc1 open only, WebCrypto engine, ${INFLIGHT} in flight`,
      perBatch: INFLIGHT,
      prepare: () => Promise.all(Array.from({ length: INFLIGHT }, () => webOpenPair.client.seal(plain))),
      run: (frames) => Promise.all((frames as string[]).map((f) => webOpenPair.agent.open(f))),
    },
    { what: `WebCrypto bare AES-GCM encrypt, ${INFLIGHT} in flight`, perBatch: INFLIGHT, run: wc.encrypt },
    { what: `WebCrypto bare AES-GCM decrypt, ${INFLIGHT} in flight`, perBatch: INFLIGHT, run: wc.decrypt },
    { what: 'node:crypto seal only, same framing (sync)', perBatch: 50, run: fifty(() => sealer.seal(plain)) },
    {
      what: 'node:crypto open only, same framing (sync)',
      perBatch: 50,
      run: () => {
        opener.rewind(); // reopen the same 50 frames each batch
        for (const f of nodeFrames) opener.open(f);
      },
    },
    { what: 'node:crypto bare AES-256-GCM encrypt (Buffer key)', perBatch: 50, run: fifty(gcmBufferKey) },
    // Each bulk target's pair side by side: bare AES-GCM, then hsc2 the same way.
    { what: 'node:crypto bare AES-256-GCM encrypt (KeyObject)', perBatch: 50, run: fifty(gcmKeyObject) },
    // hsc2 as the SDK and the agent run it in Node: binary frames, sealed and opened inline.
    { what: 'hsc2 seal only (binary, inline)', perBatch: 50, run: fifty(() => hsc2SealPair.client.sealBinarySync(plain)) },
    { what: 'node:crypto bare AES-256-GCM decrypt (KeyObject)', perBatch: 50, run: fifty(gcmDecrypt) },
    {
      what: 'hsc3 seal only, 50 sent in one tick (records, per envelope)',
      perBatch: 50,
      run: () => {
        for (let i = 0; i < 50; i++) hsc3Sealer.send(plain);
        hsc3Sealer.flush();
      },
    },
    {
      what: 'hsc3 open only, the records of 50 (per envelope)',
      perBatch: 50,
      prepare: async () => {
        hsc3Records.length = 0;
        for (let i = 0; i < 50; i++) hsc3Preparer.send(plain);
        hsc3Preparer.flush();
      },
      run: () => {
        for (const r of hsc3Records) hsc3OpenPair.agent.openRecordSync(r);
      },
    },
    {
      what: 'hsc2 open only (binary, inline)',
      perBatch: 50,
      prepare: async () => {
        hsc2Frames.length = 0;
        for (let i = 0; i < 50; i++) hsc2Frames.push(hsc2OpenPair.client.sealBinarySync(plain));
      },
      run: () => {
        for (const f of hsc2Frames) hsc2OpenPair.agent.openBinarySync(f);
      },
    },
  ];
  const windows = await interleaved(size, cells);
  if (size === 16384) {
    // Per-window ratios of what one CPU-second carries (bare CPU per message / channel CPU per message):
    // the two cells ran back to back in each window, in alternating order. CPU per message is what load
    // from other processes disturbs least; the wall-clock rates above swing with it.
    const cpus = (what: string) => windows[cells.findIndex((c) => c.what === what)]!.cpus;
    const ratios = (b: string, a: string) => cpus(b).map((c, w) => cpus(a)[w]! / c);
    const [bareEnc, bareDec] = ['node:crypto bare AES-256-GCM encrypt (KeyObject)', 'node:crypto bare AES-256-GCM decrypt (KeyObject)'];
    bulk.push(
      {
        target: 'Channel: hsc2 bulk seal vs bare AES-GCM encrypt (KeyObject), 16 KiB, per CPU-second',
        ratios: ratios('hsc2 seal only (binary, inline)', bareEnc),
      },
      {
        target: 'Channel: hsc2 bulk open vs bare AES-GCM decrypt (KeyObject), 16 KiB, per CPU-second',
        ratios: ratios('hsc2 open only (binary, inline)', bareDec),
      },
      {
        target: 'Channel: hsc3 bulk seal (a tick of 50, records of 48 KiB) vs bare AES-GCM encrypt (KeyObject), 16 KiB, per CPU-second',
        ratios: ratios('hsc3 seal only, 50 sent in one tick (records, per envelope)', bareEnc),
      },
      {
        target: 'Channel: hsc3 bulk open vs bare AES-GCM decrypt (KeyObject), 16 KiB, per CPU-second',
        ratios: ratios('hsc3 open only, the records of 50 (per envelope)', bareDec),
      },
      {
        target: 'Channel: hsc1 bulk seal vs bare AES-GCM encrypt (KeyObject), 16 KiB, per CPU-second',
        ratios: ratios(`hsc1 seal only, ${INFLIGHT} in flight`, bareEnc),
      },
      {
        target: 'Channel: hsc1 bulk open vs bare AES-GCM decrypt (KeyObject), 16 KiB, per CPU-second',
        ratios: ratios(`hsc1 open only, ${INFLIGHT} in flight`, bareDec),
      },
    );
  }
}

// What a cheaper AEAD would buy, at hsc3's record size (information for a channel version, not a target):
// node:crypto's three AEADs, and the system's OpenSSL running AES-256-GCM with no allocation per call.
{
  const record = randomBytes(RECORD_BYTES);
  const aeads: NodeAead[] = ['aes-256-gcm', 'aes-128-gcm', 'chacha20-poly1305'];
  const cells = aeads.map((algorithm) => {
    const once = bareNodeAeadEncrypt(record, algorithm);
    const run = () => {
      for (let i = 0; i < 10; i++) once();
    };
    return { what: `node:crypto bare ${algorithm} encrypt, record size`, perBatch: 10, run };
  });
  const windows = await interleaved(RECORD_BYTES, cells);
  const cpu = (i: number) => windows[i]!.cpus;
  const vsAes256 = (i: number) => summarize(cpu(0).map((c, w) => c / cpu(i)[w]!));
  console.log(`\nAEAD at hsc3's record size (${RECORD_BYTES / 1024} KiB), per CPU-second vs node:crypto AES-256-GCM (what the channel runs):`);
  for (const i of [1, 2]) console.log(`  ${aeads[i]}: ${formatRatio(vsAes256(i))}`);
  const system = systemOpensslMBs('aes-256-gcm', RECORD_BYTES);
  const nodeMBs = RECORD_BYTES / median(cpu(0));
  console.log(
    system === null
      ? '  the system OpenSSL: not measured (`openssl speed` did not run, or printed no rate this bench reads)'
      : `  the system OpenSSL (\`openssl speed -evp aes-256-gcm\`, one context, no allocation per call): ${system.toFixed(0)} MB/s against node:crypto's ${nodeMBs.toFixed(0)} MB per CPU-second (${(system / nodeMBs).toFixed(2)}×)`,
  );
}

// Handshake: each step timed separately, sequentially (RSA-2048 private ops dominate).
{
  const { publicKey, privateKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
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

const at = (what: string) => rows.find((r) => r.what.startsWith(what) && r.size === 16384) ?? { rate: NaN, cpuUs: NaN, mainUs: NaN };
const mbs = (m: Measured) => (m.rate * 16384) / 1e6;
const perMain = (m: Measured) => 16384 / m.mainUs;
const [seal, open] = [at(`hsc1 seal only, ${INFLIGHT}`), at(`hsc1 open only, ${INFLIGHT}`)];
const [webSeal, webOpen] = [at('hsc1 seal only, WebCrypto engine'), at('hsc1 open only, WebCrypto engine')];
const [wcEnc, wcDec] = [at('WebCrypto bare AES-GCM encrypt'), at('WebCrypto bare AES-GCM decrypt')];
const [nodeSeal, nodeOpen, nodeGcm, nodeGcmBuf] = [
  at('node:crypto seal only'),
  at('node:crypto open only'),
  at('node:crypto bare AES-256-GCM encrypt (KeyObject)'),
  at('node:crypto bare AES-256-GCM encrypt (Buffer'),
];
const met = Math.min(mbs(seal), mbs(open)) >= TARGET_MBS;
const f0 = (x: number) => x.toFixed(0);
console.log(`\ntarget: bulk crypto ≥ ${TARGET_MBS} MB/s at 16 KiB (per side: a sender seals, a receiver opens)`);
console.log(
  `  hsc1 as Node runs it (node:crypto engine + base64 framing): seal ${f0(mbs(seal))} MB/s, open ${f0(mbs(open))} MB/s → ${met ? 'MET' : 'NOT met'} on this machine in this run`,
);
console.log(`  hsc1 on the WebCrypto engine (browsers, Workers; in Node for comparison): seal ${f0(mbs(webSeal))} MB/s, open ${f0(mbs(webOpen))} MB/s`);
console.log(
  `  same run, same machine: WebCrypto bare AES-GCM encrypt ${f0(mbs(wcEnc))}, decrypt ${f0(mbs(wcDec))} MB/s (the WebCrypto ceiling); node:crypto bare encrypt ${f0(mbs(nodeGcm))} MB/s (Node's AES-GCM ceiling; ${f0(mbs(nodeGcmBuf))} MB/s with a Buffer key), same framing seal ${f0(mbs(nodeSeal))}, open ${f0(mbs(nodeOpen))} MB/s`,
);
console.log(
  `  hsc1 / bare WebCrypto: seal ${(mbs(seal) / mbs(wcEnc)).toFixed(2)}×, open ${(mbs(open) / mbs(wcDec)).toFixed(2)}×; hsc1 / node:crypto same framing: seal ${(mbs(seal) / mbs(nodeSeal)).toFixed(2)}×, open ${(mbs(open) / mbs(nodeOpen)).toFixed(2)}×`,
);
console.log(
  `  main-thread bound (16 KiB / main-thread µs, what one side reaches with the pool and GC on other cores): hsc1 seal ${f0(perMain(seal))}, open ${f0(perMain(open))}; ` +
    `bare WebCrypto ${f0(perMain(wcEnc))} / ${f0(perMain(wcDec))} MB/s`,
);
for (const b of bulk) reportTarget(b.target, summarize(b.ratios), 0.9, 'at-least');
