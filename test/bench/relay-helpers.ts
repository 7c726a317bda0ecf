/**
 * Helpers of relay.bench.ts: keys, bridge sign-in, child processes, memory readings, and the
 * measurement loop over a "link" (plain relay frames, or frames sealed with the hsc1 channel).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, createHash, sign, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import WebSocket, { WebSocketServer } from 'ws';
import { signedMessage } from '@hostadm/shared/crypto/signed-messages.ts';
import { answerClientHandshake, generateHostKey, startClientHandshake, type SecureChannel } from '@hostadm/shared/crypto/index.ts';

export const WARM_MS = 400;
export const WINDOW_MS = Number(process.env.BENCH_WINDOW_MS ?? 1500);

export interface Key {
  privateKey: KeyObject;
  pubKeyB64: string;
  /** SPKI PEM of the public key. */
  pem: string;
  md5: string;
  algorithm: 'rsa' | 'ed25519';
}

export function makeKey(algorithm: 'rsa' | 'ed25519'): Key {
  const { privateKey, publicKey } = algorithm === 'rsa' ? generateKeyPairSync('rsa', { modulusLength: 2048 }) : generateKeyPairSync('ed25519');
  const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
  return { privateKey, pubKeyB64: Buffer.from(pem).toString('base64'), pem, md5: createHash('md5').update(pem).digest('base64'), algorithm };
}

let peersNamed = 0;

export function open(url: string): Promise<WebSocket> {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

/**
 * Signs in to the bridge as an agent or client: answers identify, enrolls with `token`, auth_ssl
 * pinned to the key, answers list_ssl_checksums; resolves with the first announcement.
 */
export async function bridgeSignIn(
  url: string,
  type: 'server' | 'client',
  key: Key,
  token: string,
  md5Keys: string[],
): Promise<{ ws: WebSocket; offer: string[] }> {
  // The listener goes on before 'open': the bridge's identify request can arrive with the handshake.
  const ws = new WebSocket(url, { perMessageDeflate: false });
  return new Promise((resolve, reject) => {
    ws.once('error', reject);
    const onMessage = (data: Buffer) => {
      const env = JSON.parse(data.toString()) as { id: string; name: string; args: Record<string, unknown> };
      const reply = (id: string, args: unknown) => ws.send(JSON.stringify({ id, name: 'response', namespace: 'rpc', args }));
      const call = (id: string, name: string, args: unknown) => ws.send(JSON.stringify({ id, name, namespace: 'rpc', args }));
      if (env.id === 'bridge_request_ident') {
        // Each agent its own name: a host nickname (by default its hostname) belongs to one key.
        reply(env.id, { type, hostname: `bench-${type}-${process.pid}-${++peersNamed}` });
        call('enroll', 'bridge_enroll', { token, pub_key: key.pubKeyB64 });
        call('s1', 'auth_ssl', { action: 'auth_ssl', md5_key: key.md5 });
      } else if (env.name === 'error') {
        reject(new Error(`bridge refused ${env.id}: ${JSON.stringify(env.args)}`));
      } else if (env.id === 's1') {
        const proof = sign(
          key.algorithm === 'rsa' ? 'sha256' : null,
          Buffer.from(signedMessage('bridge-signin', env.args.test_string as string)),
          key.privateKey,
        );
        call('s2', 'auth_ssl', { signature: proof.toString('base64') });
      } else if (env.id === 'bridge_request_list_keys') {
        reply(env.id, { md5_keys: md5Keys });
      } else if (env.name === 'event') {
        const args = (env.args as unknown as { args: { available_connections?: string[] } }).args;
        if (args.available_connections) {
          ws.off('message', onMessage);
          resolve({ ws, offer: args.available_connections });
        }
      }
    };
    ws.on('message', onMessage);
  });
}

/**
 * RSS and heap after memory-reducing full collections (they also shrink the young generation, so RSS
 * compares); the median of three readings 150 ms apart, as RSS settles unevenly.
 */
export async function memory(): Promise<{ rss: number; heap: number }> {
  const gc = (globalThis as { gc?: (o?: object) => void }).gc;
  const readings: Array<{ rss: number; heap: number }> = [];
  for (let i = 0; i < 3; i++) {
    gc?.({ type: 'major', execution: 'sync', flavor: 'last-resort' });
    const m = process.memoryUsage();
    readings.push({ rss: m.rss, heap: m.heapUsed });
    await new Promise((r) => setTimeout(r, 150));
  }
  const mid = <T>(xs: T[], f: (x: T) => number) => xs.map(f).sort((a, b) => a - b)[1]!;
  return { rss: mid(readings, (r) => r.rss), heap: mid(readings, (r) => r.heap) };
}

// ---------------------------------------------------------------- child processes

export interface Child {
  proc: ChildProcess;
  next<T>(): Promise<T>;
  ask<T>(msg: unknown): Promise<T>;
}

/**
 * The V8 flags that client/bin/hostadm starts Node with (its `v8_flags="…"` line), so the bench's
 * bridge runs as `hostadm bridge` does.
 */
export function launcherV8Flags(): string[] {
  const launcher = readFileSync(new URL('../../client/bin/hostadm', import.meta.url), 'utf8');
  const line = /^v8_flags="([^"]*)"$/m.exec(launcher);
  if (!line) throw new Error('client/bin/hostadm has no v8_flags="…" line: the bench would not start the bridge as hostadm does');
  return line[1]!.split(' ').filter(Boolean);
}

/** Forks `script` with a role; its IPC messages are queued for `next`. `nodeFlags` go before the script. */
export function spawnRole(script: string, role: string, args: string[] = [], nodeFlags: string[] = []): Child {
  const execArgv = ['--expose-gc', '--disable-warning=ExperimentalWarning', ...nodeFlags];
  const proc = fork(script, [role, ...args], { execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const queue: unknown[] = [];
  const waiters: Array<(m: unknown) => void> = [];
  proc.on('message', (m) => (waiters.length > 0 ? waiters.shift()!(m) : queue.push(m)));
  const next = <T>() => new Promise<T>((resolve) => (queue.length > 0 ? resolve(queue.shift() as T) : waiters.push(resolve as (m: unknown) => void)));
  return {
    proc,
    next,
    ask: <T>(msg: unknown) => {
      proc.send(msg as object);
      return next<T>();
    },
  };
}

/** utime + stime of a process, in seconds (Linux /proc; clock ticks of 10 ms). */
export function cpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

// ---------------------------------------------------------------- links and the measurement

/** How round trip `s` is sent and its echo recognised. The payload starts with `s` as a 12-character tag. */
export interface Link {
  send(s: number): void;
  /** Calls `onEcho` with the tag of every echo; returns the unsubscribe. */
  listen(onEcho: (s: number) => void): () => void;
}

const tagged = (s: number, filler: string) => `${String(s).padEnd(12, ' ')}${filler.slice(12)}`;

/** Plain relay frames `<dest>\n<payload>`, `size` characters of payload. */
export function plainLink(ws: WebSocket, dest: string, size: number): Link {
  const filler = 'x'.repeat(size);
  return {
    send: (s) => ws.send(`${dest}\n${tagged(s, filler)}`),
    listen(onEcho) {
      const onMessage = (data: Buffer) => {
        const nl = data.indexOf(10);
        onEcho(Number.parseInt(data.toString('latin1', nl + 1, nl + 13), 10));
      };
      ws.on('message', onMessage);
      return () => ws.off('message', onMessage);
    },
  };
}

/**
 * Relay frames whose body is the payload (`size` bytes of plaintext) sealed with `channel`, as the
 * SDK sends them: sealed in call order and sent in that order; every echo opened in arrival order.
 * hsc2 channels send binary frames, sealed and opened inline (the SDK does so on node:crypto).
 */
export function secureLink(ws: WebSocket, dest: string, size: number, channel: SecureChannel): Link {
  const filler = 'x'.repeat(size);
  const failed = (cause: unknown) => {
    console.error('secure link failed:', cause);
    process.exit(1);
  };
  if (channel.version === 'hsc2') {
    const head = Buffer.from(`${dest}\n`);
    return {
      send: (s) => ws.send(channel.sealBinarySync(tagged(s, filler), head), { binary: true }),
      listen(onEcho) {
        const onMessage = (data: Buffer, isBinary: boolean) => {
          if (!isBinary) return;
          try {
            onEcho(Number.parseInt(channel.openBinarySync(data.subarray(data.indexOf(10) + 1)).slice(0, 12), 10));
          } catch (cause) {
            failed(cause);
          }
        };
        ws.on('message', onMessage);
        return () => ws.off('message', onMessage);
      },
    };
  }
  return {
    send: (s) => void channel.seal(tagged(s, filler)).then((frame) => ws.send(`${dest}\n${frame}`), failed),
    listen(onEcho) {
      const onMessage = (data: Buffer) => {
        const nl = data.indexOf(10);
        channel.open(data.toString('latin1', nl + 1)).then((plain) => onEcho(Number.parseInt(plain.slice(0, 12), 10)), failed);
      };
      ws.on('message', onMessage);
      return () => ws.off('message', onMessage);
    },
  };
}

export interface Cell {
  msgsPerSec: number;
  p50: number;
  p99: number;
  /** CPU of the relay process (or echo server) per frame it forwarded (or echoed), µs. */
  cpuPerFrame: number;
  /** CPU of the load client (this process: for the secure paths its seal and open) per round trip, µs. */
  clientCpuPerMsg: number;
  /** CPU of the far end (echo peer or agent; NaN when not given) per round trip, µs. */
  farCpuPerMsg: number;
}

/**
 * N round trips in flight on `link` for the window; each echo sends the next. RTTs in µs.
 * `framesPerMsg`: frames the measured process handles per round trip (a relay forwards 2, an echo
 * server answers 1).
 */
export async function measure(link: Link, inflight: number, pid: number, framesPerMsg: number, farPid = 0): Promise<Cell> {
  const mask = (1 << 20) - 1;
  const sentAt = new Float64Array(mask + 1);
  let seq = 0;
  let outstanding = 0;
  let sending = true;
  let counting = false;
  let count = 0;
  const rtts: number[] = [];
  const send = () => {
    const s = seq++;
    sentAt[s & mask] = performance.now();
    outstanding++;
    link.send(s);
  };
  let drained: () => void = () => {};
  const stop = link.listen((s) => {
    outstanding--;
    if (counting) {
      count++;
      rtts.push((performance.now() - sentAt[s & mask]!) * 1000);
    }
    if (sending) send();
    else if (outstanding === 0) drained();
  });
  for (let i = 0; i < inflight; i++) send();
  await new Promise((r) => setTimeout(r, WARM_MS));
  counting = true;
  const t0 = performance.now();
  const cpu0 = cpuSeconds(pid);
  const far0 = farPid ? cpuSeconds(farPid) : NaN;
  const own0 = process.cpuUsage();
  await new Promise((r) => setTimeout(r, WINDOW_MS));
  counting = false;
  const cpu1 = cpuSeconds(pid);
  const far1 = farPid ? cpuSeconds(farPid) : NaN;
  const own = process.cpuUsage(own0);
  const seconds = (performance.now() - t0) / 1000;
  sending = false;
  await new Promise<void>((resolve) => {
    drained = resolve;
    if (outstanding === 0) resolve();
    setTimeout(resolve, 5000);
  });
  stop();
  rtts.sort((a, b) => a - b);
  const pct = (p: number) => rtts[Math.min(rtts.length - 1, Math.floor(p * rtts.length))] ?? NaN;
  return {
    msgsPerSec: count / seconds,
    p50: pct(0.5),
    p99: pct(0.99),
    cpuPerFrame: ((cpu1 - cpu0) * 1e6) / (count * framesPerMsg),
    clientCpuPerMsg: (own.user + own.system) / count,
    farCpuPerMsg: ((far1 - far0) * 1e6) / count,
  };
}

// ---------------------------------------------------------------- the hsc1 channel over the relay

/**
 * The bench's handshake envelopes (the real SDK wraps the same args in auth_ssl requests): the client
 * sends `{"c1":…}` in clear, the agent answers `{"a1":…}`, the client sends `{"c2":…}` sealed (the
 * first sealed frame, seq 0) and the agent answers `{"ok":true}` sealed.
 */
export async function clientChannel(ws: WebSocket, dest: string, key: Key, hostPublicRaw: string, offerHsc2 = false): Promise<SecureChannel> {
  const frames: Buffer[] = [];
  let wake: () => void = () => {};
  const onMessage = (data: Buffer) => {
    frames.push(data.subarray(data.indexOf(10) + 1));
    wake();
  };
  const nextBody = async () => {
    while (frames.length === 0) await new Promise<void>((r) => (wake = r));
    return frames.shift()!;
  };
  ws.on('message', onMessage);
  try {
    const hs = await startClientHandshake({
      clientKeyPem: key.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      clientSpkiPem: key.pem,
      offerHsc2,
    });
    ws.send(`${dest}\n${JSON.stringify({ c1: hs.c1Args })}`);
    const { a1 } = JSON.parse((await nextBody()).toString()) as { a1: unknown };
    const done = await hs.finish(a1, { pinnedHostKey: hostPublicRaw });
    const c2 = JSON.stringify({ c2: done.c2Args });
    if (done.channel.version === 'hsc2') ws.send(await done.channel.sealBinary(c2, Buffer.from(`${dest}\n`)), { binary: true });
    else ws.send(`${dest}\n${await done.channel.seal(c2)}`);
    const reply = await nextBody();
    const opened = done.channel.version === 'hsc2' ? await done.channel.openBinary(reply) : await done.channel.open(reply.toString());
    const ok = JSON.parse(opened) as { ok?: boolean };
    if (ok.ok !== true) throw new Error('the echo agent refused C2');
    return done.channel;
  } finally {
    ws.off('message', onMessage);
  }
}

/**
 * The agent side on an already signed-in socket: answers the handshake, then opens every sealed frame
 * and sends its plaintext back sealed (opened in arrival order, resealed and sent in that order).
 */
export async function echoAgentChannel(ws: WebSocket, clientSpkiPem: string): Promise<string> {
  const host = await generateHostKey();
  let channel: SecureChannel | null = null;
  let verifyC2: ((args: unknown) => Promise<boolean>) | null = null;
  const failed = (cause: unknown) => {
    console.error('secure echo agent failed:', cause);
    process.exit(1);
  };
  ws.on('message', (d: Buffer, isBinary: boolean) => {
    if (d[0] === 0x7b) return; // the bridge's own envelopes
    const nl = d.indexOf(10);
    if (isBinary) {
      // hsc2: opened and resealed inline, the reply one buffer with the client's line in front.
      const ch = channel!;
      try {
        const plain = ch.openBinarySync(d.subarray(nl + 1));
        if (verifyC2) {
          const verify = verifyC2;
          verifyC2 = null;
          void verify((JSON.parse(plain) as { c2: unknown }).c2)
            .then((ok) => {
              if (!ok) throw new Error('C2 did not verify');
              ws.send(ch.sealBinarySync(JSON.stringify({ ok: true }), d.subarray(0, nl + 1)), { binary: true });
            })
            .catch(failed);
          return;
        }
        ws.send(ch.sealBinarySync(plain, d.subarray(0, nl + 1)), { binary: true });
      } catch (cause) {
        failed(cause);
      }
      return;
    }
    const head = d.toString('latin1', 0, nl + 1);
    const body = d.toString('latin1', nl + 1);
    if (body[0] === '{') {
      const { c1 } = JSON.parse(body) as { c1: unknown };
      void answerClientHandshake({ c1Args: c1, clientSpkiPem, hostKeyPem: host.privatePkcs8Pem, hostPublicRaw: host.publicRaw }).then((answer) => {
        channel = answer.channel;
        verifyC2 = answer.verifyC2;
        ws.send(`${head}${JSON.stringify({ a1: answer.a1Args })}`);
      }, failed);
      return;
    }
    const ch = channel!;
    const opened = ch.open(body);
    if (verifyC2) {
      const verify = verifyC2;
      verifyC2 = null;
      void opened
        .then(async (plain) => {
          if (!(await verify((JSON.parse(plain) as { c2: unknown }).c2))) throw new Error('C2 did not verify');
          ws.send(`${head}${await ch.seal(JSON.stringify({ ok: true }))}`);
        })
        .catch(failed);
      return;
    }
    void opened.then((plain) => ch.seal(plain)).then((frame) => ws.send(head + frame), failed);
  });
  return host.publicRaw;
}

// ---------------------------------------------------------------- child roles shared with relay.bench.ts

type Reply = (msg: unknown) => void;
const toParent: Reply = (msg) => process.send!(msg);

/** The direct path's far end (and the bare ws server of the memory comparison): echoes every frame. */
export async function roleEchoServer(): Promise<void> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false });
  await new Promise((r) => wss.once('listening', r));
  wss.on('connection', (ws) => ws.on('message', (d, isBinary) => ws.send(d, { binary: isBinary })));
  process.on('message', (msg: { cmd: string }) => {
    if (msg.cmd === 'mem') void memory().then((mem) => toParent({ mem, clients: wss.clients.size }));
  });
  toParent({ port: (wss.address() as { port: number }).port });
}

/**
 * The minimal relay: the floor a forwarding relay costs. Pairs connections in arrival order.
 * `withBridgeHeap`: the same relay in a process that has loaded the bridge's modules (a control:
 * it separates what the bridge's relay path costs from what its process's larger heap costs).
 */
export async function roleMinimalRelay(withBridgeHeap: boolean): Promise<void> {
  if (withBridgeHeap) {
    (globalThis as { keep?: unknown }).keep = await import('@hostadm/bridge');
    (await import('@hostadm/bridge/runtime/node/v8-tuning.ts')).releaseStartupHeap();
  }
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false });
  let waiting: WebSocket | null = null;
  wss.on('connection', (ws) => {
    if (!waiting) {
      waiting = ws;
      return;
    }
    const a = waiting;
    waiting = null;
    a.on('message', (d, isBinary) => ws.send(d, { binary: isBinary }));
    ws.on('message', (d, isBinary) => a.send(d, { binary: isBinary }));
    a.on('close', () => ws.close());
    ws.on('close', () => a.close());
  });
  await new Promise((r) => wss.once('listening', r));
  toParent({ port: (wss.address() as { port: number }).port });
}
