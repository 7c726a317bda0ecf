/**
 * Where the Node bridge's relay CPU goes (a profiling tool, not a bench or a test): the bridge and a
 * signed-in echo agent each in their own process, plain relay frames from a signed-in client in this
 * one, `PROFILE_INFLIGHT` round trips in flight for BENCH_WINDOW_MS. It prints the bridge's CPU per
 * forwarded frame and its read and write system calls per frame (/proc/<pid>/io: syscr, syscw), which
 * is what write coalescing (docs/bridge-protocol.md §2) changes, and its user and system CPU apart; the
 * same figures for the minimal relay and for nginx (relay.bench.ts's relay to beat, when it can be
 * started) are printed beside it. `PROFILE_CPU_PROF=<dir>` starts the bridge with `--cpu-prof` into that
 * directory (written when it exits).
 *
 * `PROFILE_PATH=hsc3` profiles the encrypted path instead (the load client seals, the bridge relays,
 * an echo agent opens and reseals, the client opens: relay.bench.ts's bridge+hsc3 row, through the
 * product's ChannelSender) beside the plain bridge, and prints the CPU per round trip of all three
 * processes; with PROFILE_CPU_PROF the echo agent starts with `--cpu-prof` too, and this process (the
 * load client) profiles its measured window through the inspector into the same directory.
 *
 * Run: node test/bench/relay-profile.ts   Env: BENCH_WINDOW_MS (1500), PROFILE_SIZE (200),
 * PROFILE_INFLIGHT (64), PROFILE_CPU_PROF (a directory), PROFILE_PATH (plain | hsc3).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type WebSocket from 'ws';
import { BINARY_CHANNEL_VERSIONS } from '@hostadm/shared/crypto/index.ts';
import { roleBridge } from './bridge-role.ts';
import { startNginxRelay } from './nginx-relay.ts';
import { clientChannel, echoAgentChannel, secureLink } from './channel-helpers.ts';
import {
  bridgeSignIn,
  launcherV8Flags,
  makeKey,
  measure,
  open,
  plainLink,
  roleEchoServer,
  roleMinimalRelay,
  spawnRole,
  WARM_MS,
  WINDOW_MS,
  type Child,
  type Link,
} from './relay-helpers.ts';

const SIZE = Number(process.env.PROFILE_SIZE ?? 200);
const INFLIGHT = Number(process.env.PROFILE_INFLIGHT ?? 64);
const PATH = process.env.PROFILE_PATH ?? 'plain';
const CPU_PROF_DIR = process.env.PROFILE_CPU_PROF;
const self = fileURLToPath(import.meta.url);

/** User and system CPU of a process so far, in seconds (Linux /proc; clock ticks of 10 ms). */
function cpuSplit(pid: number): { user: number; system: number } {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return { user: Number(fields[11]) / 100, system: Number(fields[12]) / 100 };
}

/** Read and write system calls of a process so far (Linux /proc/<pid>/io). */
function syscalls(pid: number): { reads: number; writes: number } {
  const io = readFileSync(`/proc/${pid}/io`, 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}: (\\d+)$`, 'm').exec(io)?.[1] ?? NaN);
  return { reads: field('syscr'), writes: field('syscw') };
}

async function echoPeer(url: string, token?: string, clientMd5?: string): Promise<void> {
  const ws = token ? (await bridgeSignIn(url, 'server', makeKey('ed25519'), token, [clientMd5!])).ws : await open(url);
  ws.on('message', (d: Buffer, isBinary) => {
    if (d[0] !== 0x7b) ws.send(d, { binary: isBinary });
  });
  process.send!({ ready: true });
}

async function roleSecureEchoPeer(url: string, token: string, clientMd5: string, clientPemB64: string): Promise<void> {
  const { ws } = await bridgeSignIn(url, 'server', makeKey('ed25519'), token, [clientMd5]);
  process.send!({ hostPublicRaw: await echoAgentChannel(ws, Buffer.from(clientPemB64, 'base64').toString()) });
}

/** This process's CPU profile of one measurement (the load client's side), written to PROFILE_CPU_PROF. */
async function profiledHere<T>(name: string, run: () => Promise<T>): Promise<T> {
  if (!CPU_PROF_DIR) return run();
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  try {
    return await run();
  } finally {
    const { profile } = await session.post('Profiler.stop');
    mkdirSync(CPU_PROF_DIR, { recursive: true }); // the load client may finish before a profiled child made it
    writeFileSync(join(CPU_PROF_DIR, `load-client-${name}-${process.pid}.cpuprofile`), JSON.stringify(profile));
    session.disconnect();
  }
}

async function profilePath(name: string, pid: number, link: Link, farPid = 0): Promise<void> {
  const before = syscalls(pid);
  const cpuBefore = cpuSplit(pid);
  const cell = await profiledHere(name.replace(/\W+/g, '-'), () => measure(link, INFLIGHT, pid, 2, farPid));
  const after = syscalls(pid);
  const cpuAfter = cpuSplit(pid);
  // measure() counts frames in its window only; the syscalls span warm-up and drain too, so count those frames alike.
  const frames = (cell.msgsPerSec * 2 * (WINDOW_MS + WARM_MS)) / 1000;
  console.log(
    `${name.padEnd(14)} ${SIZE} B × ${INFLIGHT}: ${cell.msgsPerSec.toFixed(0)} msg/s, CPU ${cell.cpuPerFrame.toFixed(2)} µs/frame, ` +
      `reads ${((after.reads - before.reads) / frames).toFixed(2)}/frame, writes ${((after.writes - before.writes) / frames).toFixed(2)}/frame, ` +
      `user ${(((cpuAfter.user - cpuBefore.user) * 1e6) / frames).toFixed(2)} + system ${(((cpuAfter.system - cpuBefore.system) * 1e6) / frames).toFixed(2)} µs/frame (approx.)`,
  );
  if (farPid) {
    const total = cell.clientCpuPerMsg + cell.cpuPerFrame * 2 + cell.farCpuPerMsg;
    console.log(
      `${''.padEnd(14)} CPU per round trip: load client ${cell.clientCpuPerMsg.toFixed(1)} + bridge ${(cell.cpuPerFrame * 2).toFixed(1)} + far end ${cell.farCpuPerMsg.toFixed(1)} = ${total.toFixed(1)} µs`,
    );
  }
}

async function parent(): Promise<void> {
  const children: Child[] = [];
  const spawn = (role: string, args: string[] = [], flags: string[] = []) => {
    const c = spawnRole(self, role, args, flags);
    children.push(c);
    return c;
  };
  try {
    const minimalChild = spawn('minimal-relay');
    const minimalUrl = `ws://127.0.0.1:${(await minimalChild.next<{ port: number }>()).port}`;
    await spawn('echo-peer', [minimalUrl]).next();
    const minimal = await open(minimalUrl);

    const cpuProf = CPU_PROF_DIR ? ['--cpu-prof', `--cpu-prof-dir=${CPU_PROF_DIR}`] : [];
    const bridge = spawn('bridge', [], [...launcherV8Flags(), ...cpuProf, ...(process.env.PROFILE_NODE_FLAGS ?? '').split(' ').filter(Boolean)]);
    const bridgeUrl = (await bridge.next<{ url: string }>()).url;
    const clientKey = makeKey('rsa');
    const [agentToken] = (await bridge.ask<{ tokens: string[] }>({ cmd: 'tokens', kind: 'agent', n: 1 })).tokens;
    const echo = spawn('echo-peer', [bridgeUrl, agentToken!, clientKey.md5]);
    await echo.next();
    const [clientToken] = (await bridge.ask<{ tokens: string[] }>({ cmd: 'tokens', kind: 'client', n: 1 })).tokens;
    const { ws: viaBridge, offer } = await bridgeSignIn(bridgeUrl, 'client', clientKey, clientToken!, [clientKey.md5]);
    const dummy = 'agent-00000000-0000-0000-0000-000000000000';

    let secure: { ws: WebSocket; link: Link; agent: Child } | null = null;
    if (PATH === 'hsc3') {
      // relay.bench.ts's bridge+hsc3 row: its own client key and echo agent, the SDK's channel offer.
      const secureKey = makeKey('rsa');
      const [secureAgentToken] = (await bridge.ask<{ tokens: string[] }>({ cmd: 'tokens', kind: 'agent', n: 1 })).tokens;
      const agentArgs = [bridgeUrl, secureAgentToken!, secureKey.md5, Buffer.from(secureKey.pem).toString('base64')];
      const agent = spawn('secure-echo-peer', agentArgs, cpuProf);
      const { hostPublicRaw } = await agent.next<{ hostPublicRaw: string }>();
      const [secureToken] = (await bridge.ask<{ tokens: string[] }>({ cmd: 'tokens', kind: 'client', n: 1 })).tokens;
      const signedIn = await bridgeSignIn(bridgeUrl, 'client', secureKey, secureToken!, [secureKey.md5]);
      const channel = await clientChannel(signedIn.ws, signedIn.offer[0]!, secureKey, hostPublicRaw, BINARY_CHANNEL_VERSIONS);
      if (channel.version !== 'hsc3') throw new Error(`the secure channel is ${channel.version}`);
      secure = { ws: signedIn.ws, link: secureLink(signedIn.ws, signedIn.offer[0]!, SIZE, channel), agent };
    } else {
      await profilePath('minimal relay', minimalChild.proc.pid!, plainLink(minimal, dummy, SIZE));
      // nginx in front of a ws echo server (relay.bench.ts's nginx row): the relay to beat.
      const echoServer = spawn('echo-server');
      const nginx = await startNginxRelay((await echoServer.next<{ port: number }>()).port);
      if ('url' in nginx) {
        const viaNginx = await open(nginx.url);
        await profilePath('nginx', nginx.pid, plainLink(viaNginx, dummy, SIZE));
        viaNginx.terminate();
        await nginx.stop();
      } else console.log(`nginx left out: ${nginx.skipped}`);
    }
    await profilePath('bridge', bridge.proc.pid!, plainLink(viaBridge, offer[0]!, SIZE), echo.proc.pid!);
    if (secure) await profilePath('bridge+hsc3', bridge.proc.pid!, secure.link, secure.agent.proc.pid!);
    const stats = await bridge.ask<{ metrics: { drops: Record<string, number>; frames_relayed: number } }>({ cmd: 'mem' });
    console.log(`bridge counters: ${stats.metrics.frames_relayed} frames relayed, drops ${JSON.stringify(stats.metrics.drops)}`);
    minimal.terminate();
    viaBridge.terminate();
    if (secure) {
      secure.ws.terminate();
      // SIGTERM exits through process.exit, which writes the agent's --cpu-prof profile.
      secure.agent.proc.kill('SIGTERM');
      await new Promise((r) => secure.agent.proc.once('exit', r));
    }
    bridge.proc.send({ cmd: 'stop' });
    await new Promise((r) => bridge.proc.once('exit', r));
    if (cpuProf.length > 0) console.log(`CPU profiles written to ${CPU_PROF_DIR}`);
  } finally {
    for (const c of children) if (c.proc.exitCode === null) c.proc.kill('SIGTERM');
  }
}

const [role, ...args] = process.argv.slice(2);
if (role) process.on('SIGTERM', () => process.exit(0));
switch (role) {
  case 'echo-server':
    await roleEchoServer();
    break;
  case 'minimal-relay':
    await roleMinimalRelay(false);
    break;
  case 'bridge':
    await roleBridge();
    break;
  case 'echo-peer':
    await echoPeer(args[0]!, args[1], args[2]);
    break;
  case 'secure-echo-peer':
    await roleSecureEchoPeer(args[0]!, args[1]!, args[2]!, args[3]!);
    break;
  default:
    await parent();
    process.exit(0);
}
