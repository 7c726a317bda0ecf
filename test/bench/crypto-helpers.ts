/**
 * Helpers of crypto.bench.ts: the measurement loop, channel pairs (node:crypto and WebCrypto
 * engines), and the baselines the channel is set against: the same framing done directly on
 * node:crypto, bare node:crypto AES-256-GCM, and bare WebCrypto AES-256-GCM with calls in flight.
 */
import { spawnSync } from 'node:child_process';
import { createCipheriv, createDecipheriv, createSecretKey, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { answerClientHandshake, generateHostKey, SecureChannel, startClientHandshake, type ChannelVersion } from '@hostadm/shared/crypto/index.ts';

export const WINDOW_MS = Number(process.env.BENCH_WINDOW_MS ?? 600);
export const WINDOWS = Number(process.env.BENCH_WINDOWS ?? 6);
export const INFLIGHT = Number(process.env.BENCH_INFLIGHT ?? 64);

export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

export interface Measured {
  /** Messages per wall-clock second (median window). */
  rate: number;
  /** Process CPU (all threads, so WebCrypto's thread pool too) per message, in µs (median window). */
  cpuUs: number;
  /** Main-thread CPU per message, in µs (median window). */
  mainUs: number;
}

export const cpuNow = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
export const mainNow = () => {
  const u = process.threadCpuUsage();
  return u.user + u.system;
};

/** Runs `batch` (which processes `perBatch` messages) repeatedly; medians over the windows. */
export async function measure(perBatch: number, batch: () => Promise<void> | void): Promise<Measured> {
  const warmEnd = performance.now() + WINDOW_MS / 3;
  while (performance.now() < warmEnd) await batch();
  const rates: number[] = [];
  const cpus: number[] = [];
  const mains: number[] = [];
  for (let w = 0; w < WINDOWS; w++) {
    let n = 0;
    const c0 = cpuNow();
    const m0 = mainNow();
    const t0 = performance.now();
    while (performance.now() - t0 < WINDOW_MS) {
      await batch();
      n += perBatch;
    }
    rates.push(n / ((performance.now() - t0) / 1000));
    cpus.push((cpuNow() - c0) / n);
    mains.push((mainNow() - m0) / n);
  }
  return { rate: median(rates), cpuUs: median(cpus), mainUs: median(mains) };
}

export function envelopeOfSize(bytes: number): string {
  const head = '{"id":"bench","name":"response","namespace":"rpc","args":"';
  return `${head + 'x'.repeat(Math.max(0, bytes - head.length - 2))}"}`;
}

/** A negotiated pair: hsc1 (nothing offered), hsc2 (`true`, as a client before hsc3) or the versions listed. */
export async function channelPair(offer: boolean | readonly ChannelVersion[] = false): Promise<{ client: SecureChannel; agent: SecureChannel }> {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  const host = await generateHostKey();
  const offered = typeof offer === 'boolean' ? { offerHsc2: offer } : { channels: offer };
  const hs = await startClientHandshake({ clientKeyPem: privateKey, clientSpkiPem: publicKey, ...offered });
  const agent = await answerClientHandshake({ c1Args: hs.c1Args, clientSpkiPem: publicKey, hostKeyPem: host.privatePkcs8Pem });
  const done = await hs.finish(agent.a1Args, { pinnedHostKey: host.publicRaw });
  return { client: done.channel, agent: agent.channel };
}

/** node:crypto with the same frame layout, synchronous: the ceiling for this framing in Node. */
export function nodeFraming() {
  const key = createSecretKey(randomBytes(32));
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
      return `hsc1.${Buffer.concat([seq, c.update(plain, 'utf8'), c.final(), c.getAuthTag()]).toString('base64')}`;
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

/** Bare node:crypto AES-256-GCM of `plain`: encrypt only, or encrypt then decrypt. */
export function bareNodeGcm(plain: Buffer, decryptToo: boolean, key: KeyObject | Buffer = createSecretKey(randomBytes(32))): () => void {
  const iv = Buffer.alloc(12);
  const aad = randomBytes(37);
  return () => {
    const c = createCipheriv('aes-256-gcm', key, iv);
    c.setAAD(aad);
    const ct = Buffer.concat([c.update(plain), c.final()]);
    if (!decryptToo) return;
    const d = createDecipheriv('aes-256-gcm', key, iv);
    d.setAAD(aad);
    d.setAuthTag(c.getAuthTag());
    Buffer.concat([d.update(ct), d.final()]);
  };
}

/** Bare node:crypto AES-256-GCM decryption of one sealed `plain` (the counterpart of the encrypt row). */
export function bareNodeGcmDecrypt(plain: Buffer): () => void {
  const key = createSecretKey(randomBytes(32));
  const iv = Buffer.alloc(12);
  const aad = randomBytes(37);
  const c = createCipheriv('aes-256-gcm', key, iv);
  c.setAAD(aad);
  const ct = Buffer.concat([c.update(plain), c.final()]);
  const tag = c.getAuthTag();
  return () => {
    const d = createDecipheriv('aes-256-gcm', key, iv);
    d.setAAD(aad);
    d.setAuthTag(tag);
    Buffer.concat([d.update(ct), d.final()]);
  };
}

/** Bare WebCrypto AES-256-GCM, `INFLIGHT` calls at a time (same iv/aad shapes as hsc1, no framing). */
export async function bareWebCrypto(plain: Uint8Array): Promise<{ encrypt: () => Promise<unknown>; decrypt: () => Promise<unknown> }> {
  const raw = randomBytes(32);
  const [ek, dk] = await Promise.all([
    crypto.subtle.importKey('raw', raw, { name: 'AES-GCM' }, false, ['encrypt']),
    crypto.subtle.importKey('raw', raw, { name: 'AES-GCM' }, false, ['decrypt']),
  ]);
  const aad = randomBytes(37);
  const iv = (i: number) => {
    const v = new Uint8Array(12);
    new DataView(v.buffer).setUint32(8, i);
    return v;
  };
  const params = (i: number) => ({ name: 'AES-GCM', iv: iv(i), additionalData: aad, tagLength: 128 });
  const cts = await Promise.all(Array.from({ length: INFLIGHT }, (_, i) => crypto.subtle.encrypt(params(i), ek, plain)));
  return {
    encrypt: () => Promise.all(Array.from({ length: INFLIGHT }, (_, i) => crypto.subtle.encrypt(params(i), ek, plain))),
    decrypt: () => Promise.all(cts.map((ct, i) => crypto.subtle.decrypt(params(i), dk, new Uint8Array(ct)))),
  };
}

/** A pair on the WebCrypto engine (what browsers and Workers use), with fresh random secrets. */
export async function webCryptoPair(): Promise<{ client: SecureChannel; agent: SecureChannel }> {
  const secrets = { kC2a: randomBytes(32), kA2c: randomBytes(32), sid: randomBytes(16) };
  const copy = () => ({ kC2a: Uint8Array.from(secrets.kC2a), kA2c: Uint8Array.from(secrets.kA2c), sid: Uint8Array.from(secrets.sid) });
  return {
    client: await SecureChannel.create('client', copy(), { engine: 'webcrypto' }),
    agent: await SecureChannel.create('agent', copy(), { engine: 'webcrypto' }),
  };
}

/** The AEADs a channel could run, as node:crypto names them. */
export type NodeAead = 'aes-256-gcm' | 'aes-128-gcm' | 'chacha20-poly1305';

/** One bare node:crypto encryption of `plain` with `algorithm` (a KeyObject key of its size, as aead.ts keys it). */
export function bareNodeAeadEncrypt(plain: Buffer, algorithm: NodeAead): () => void {
  const key = createSecretKey(randomBytes(algorithm === 'aes-128-gcm' ? 16 : 32));
  const iv = Buffer.alloc(12);
  const aad = randomBytes(37);
  return () => {
    // One overload per mode in @types/node: the GCM one types all three (a 16-byte tag each).
    const c = createCipheriv(algorithm as 'aes-256-gcm', key, iv, { authTagLength: 16 });
    c.setAAD(aad);
    c.update(plain);
    c.final();
    c.getAuthTag();
  };
}

/**
 * MB/s of the system's `openssl speed -evp <algorithm>` at `bytes` per call (one context reused, no
 * allocation per call: the CPU's own AEAD speed), or null where `openssl` is missing or says nothing
 * this parser reads. Its last line is `<NAME> <rate>k`, in thousands of bytes per second.
 */
export function systemOpensslMBs(algorithm: NodeAead, bytes: number): number | null {
  const run = spawnSync('openssl', ['speed', '-seconds', '1', '-bytes', String(bytes), '-evp', algorithm], { encoding: 'utf8', timeout: 20_000 });
  if (run.status !== 0 || typeof run.stdout !== 'string') return null;
  const last = run.stdout.trim().split('\n').at(-1) ?? '';
  const rate = /\s([\d.]+)k$/.exec(last);
  return rate ? Number(rate[1]) / 1000 : null;
}
