/**
 * The Node bridge as a bench child process (relay.bench.ts, idle-memory.bench.ts): started in-process
 * with a silent logger and no per-address socket cap (every bench peer comes from loopback, and the
 * idle-agent rounds open thousands), answering its parent over IPC:
 * `{cmd: 'tokens', kind, n}` → `{tokens}` (join tokens), `{cmd: 'mem'}` → `{mem, metrics}`, `{cmd: 'metrics'}` →
 * `{metrics}` (no collection first),
 * `{cmd: 'snapshot', path}` → `{written}` (a V8 heap snapshot, for heap-diff.ts), `{cmd: 'stop'}`.
 * BENCH_PARK_QUIET_SECONDS sets `parkQuietSeconds` (0: idle sockets are never parked; default 5).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeHeapSnapshot } from 'node:v8';
import { memory } from './relay-helpers.ts';

export async function roleBridge(): Promise<void> {
  const toParent = (msg: unknown) => process.send!(msg);
  const { startBridge, issueJoinToken, joinSecretKey } = await import('@hostadm/bridge');
  const pino = (await import('pino')).default;
  const dataDir = mkdtempSync(join(tmpdir(), 'hostadm-bench-bridge-'));
  const bridge = await startBridge({
    listen: { host: '127.0.0.1', port: 0 },
    dataDir,
    logger: pino({ level: 'silent' }),
    config: {
      maxConnectionsPerAddress: 100_000,
      ...(process.env.BENCH_PARK_QUIET_SECONDS ? { parkQuietSeconds: Number(process.env.BENCH_PARK_QUIET_SECONDS) } : {}),
    },
  });
  const secret = joinSecretKey(dataDir);
  process.on('message', async (msg: { cmd: string; kind?: 'agent' | 'client'; n?: number; path?: string }) => {
    if (msg.cmd === 'tokens') {
      const tokens: string[] = [];
      for (let i = 0; i < (msg.n ?? 1); i++) tokens.push((await issueJoinToken(secret, { kind: msg.kind!, ttlSeconds: 600 }, Date.now())).token);
      toParent({ tokens });
    } else if (msg.cmd === 'mem') {
      toParent({ mem: await memory(), metrics: bridge.metrics() });
    } else if (msg.cmd === 'metrics') {
      toParent({ metrics: bridge.metrics() });
    } else if (msg.cmd === 'snapshot') {
      await memory();
      toParent({ written: writeHeapSnapshot(msg.path) });
    } else if (msg.cmd === 'stop') {
      await bridge.close();
      rmSync(dataDir, { recursive: true, force: true });
      process.exit(0);
    }
  });
  toParent({ url: bridge.url });
}
