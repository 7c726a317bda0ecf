/**
 * Where the Node bridge's relay CPU goes (a profiling tool, not a bench or a test): the bridge and a
 * signed-in echo agent each in their own process, plain relay frames from a signed-in client in this
 * one, `PROFILE_INFLIGHT` round trips in flight for BENCH_WINDOW_MS. It prints the bridge's CPU per
 * forwarded frame and its read and write system calls per frame (/proc/<pid>/io: syscr, syscw), which
 * is what write coalescing (docs/bridge-protocol.md §2) changes; the same figures for the minimal relay
 * are printed as the floor. `PROFILE_CPU_PROF=<dir>` starts the bridge with `--cpu-prof` into that
 * directory (written when it exits).
 *
 * Run: node test/bench/relay-profile.ts   Env: BENCH_WINDOW_MS (1500), PROFILE_SIZE (200),
 * PROFILE_INFLIGHT (64), PROFILE_CPU_PROF (a directory).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { roleBridge } from './bridge-role.ts';
import {
  bridgeSignIn,
  launcherV8Flags,
  makeKey,
  measure,
  open,
  plainLink,
  roleMinimalRelay,
  spawnRole,
  WARM_MS,
  WINDOW_MS,
  type Child,
} from './relay-helpers.ts';

const SIZE = Number(process.env.PROFILE_SIZE ?? 200);
const INFLIGHT = Number(process.env.PROFILE_INFLIGHT ?? 64);
const self = fileURLToPath(import.meta.url);

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

async function profilePath(name: string, pid: number, link: ReturnType<typeof plainLink>): Promise<void> {
  const before = syscalls(pid);
  const cell = await measure(link, INFLIGHT, pid, 2);
  const after = syscalls(pid);
  // measure() counts frames in its window only; the syscalls span warm-up and drain too, so count those frames alike.
  const frames = (cell.msgsPerSec * 2 * (WINDOW_MS + WARM_MS)) / 1000;
  console.log(
    `${name.padEnd(14)} ${SIZE} B × ${INFLIGHT}: ${cell.msgsPerSec.toFixed(0)} msg/s, CPU ${cell.cpuPerFrame.toFixed(2)} µs/frame, ` +
      `reads ${((after.reads - before.reads) / frames).toFixed(2)}/frame, writes ${((after.writes - before.writes) / frames).toFixed(2)}/frame (approx.)`,
  );
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

    const cpuProf = process.env.PROFILE_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.PROFILE_CPU_PROF}`] : [];
    const bridge = spawn('bridge', [], [...launcherV8Flags(), ...cpuProf]);
    const bridgeUrl = (await bridge.next<{ url: string }>()).url;
    const clientKey = makeKey('rsa');
    const [agentToken] = (await bridge.ask<{ tokens: string[] }>({ cmd: 'tokens', kind: 'agent', n: 1 })).tokens;
    await spawn('echo-peer', [bridgeUrl, agentToken!, clientKey.md5]).next();
    const [clientToken] = (await bridge.ask<{ tokens: string[] }>({ cmd: 'tokens', kind: 'client', n: 1 })).tokens;
    const { ws: viaBridge, offer } = await bridgeSignIn(bridgeUrl, 'client', clientKey, clientToken!, [clientKey.md5]);
    const dummy = 'agent-00000000-0000-0000-0000-000000000000';

    await profilePath('minimal relay', minimalChild.proc.pid!, plainLink(minimal, dummy, SIZE));
    await profilePath('bridge', bridge.proc.pid!, plainLink(viaBridge, offer[0]!, SIZE));
    const stats = await bridge.ask<{ metrics: { drops: Record<string, number>; frames_relayed: number } }>({ cmd: 'mem' });
    console.log(`bridge counters: ${stats.metrics.frames_relayed} frames relayed, drops ${JSON.stringify(stats.metrics.drops)}`);
    minimal.terminate();
    viaBridge.terminate();
    bridge.proc.send({ cmd: 'stop' });
    await new Promise((r) => bridge.proc.once('exit', r));
    if (cpuProf.length > 0) console.log(`bridge CPU profile written to ${process.env.PROFILE_CPU_PROF}`);
  } finally {
    for (const c of children) if (c.proc.exitCode === null) c.proc.kill('SIGTERM');
  }
}

const [role, ...args] = process.argv.slice(2);
if (role) process.on('SIGTERM', () => process.exit(0));
switch (role) {
  case 'minimal-relay':
    await roleMinimalRelay(false);
    break;
  case 'bridge':
    await roleBridge();
    break;
  case 'echo-peer':
    await echoPeer(args[0]!, args[1], args[2]);
    break;
  default:
    await parent();
    process.exit(0);
}
