/**
 * What `procinfo` on Linux costs over running `ps` yourself: the same `ps` argv spawned directly,
 * then the request through the agent's pipeline in-process, then over a real WebSocket. Read-only
 * on this host's process table, so no sandbox is needed.
 *
 * Run: node test/bench/procinfo.bench.ts [iterations]   (or `npm run bench procinfo`)
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { startTestAgent, TestClient } from '../helpers/agent.ts';
import { PS_ARGV } from '@hostadm/agent/platforms/linux/parse/systemmanager.ts';
import { SAFE_ENV } from '@hostadm/agent/runner/runner.ts';
import type { Connection } from '@hostadm/agent/server/context.ts';

const run = promisify(execFile);
const N = Number(process.argv[2] ?? process.env.BENCH_ITERATIONS ?? 50);
const WARMUP = 3;

async function time(label: string, once: () => Promise<void>): Promise<number> {
  for (let i = 0; i < WARMUP; i++) await once();
  const start = performance.now();
  for (let i = 0; i < N; i++) await once();
  const perCall = (performance.now() - start) / N;
  console.log(`${label.padEnd(34)} ${perCall.toFixed(2).padStart(8)} ms/call`);
  return perCall;
}

if (process.platform !== 'linux') {
  console.log('procinfo bench: Linux only (it measures the Linux platform); skipped');
  process.exit(0);
}

// Production settings: replies are not re-validated against the contract.
const agent = await startTestAgent({ platform: 'linux', config: { strictReplies: false } });
try {
  const session = agent.services.sessions.create({ user: 'root', level: 'full', groups: ['wheel'], method: 'token', connectionId: 'bench' });
  const connection: Connection = { id: 'bench', transport: 'websocket', address: '127.0.0.1', token: session.token };
  const envelope = { id: 'b', name: 'systemmanager', namespace: 'admin', args: { action: 'procinfo' } };

  const first = await agent.pipeline.handle(connection, envelope);
  if (first.name !== 'response') throw new Error(`procinfo failed: ${JSON.stringify(first.args)}`);
  const processes = Object.keys((first.args as { procinfo: object }).procinfo).length;
  console.log(`procinfo on this host: ${processes} processes, ${N} calls each after ${WARMUP} warm-up calls`);

  const [cmd, ...args] = PS_ARGV;
  const direct = await time('ps spawned directly', async () => {
    await run(cmd, args, { env: { ...SAFE_ENV }, maxBuffer: 64 * 1024 * 1024 });
  });

  const inProcess = await time('agent pipeline, in-process', async () => {
    const reply = await agent.pipeline.handle(connection, envelope);
    if (reply.name !== 'response') throw new Error(JSON.stringify(reply.args));
  });

  const client = await TestClient.connect(agent.url);
  try {
    const resumed = await client.request('rpc', 'auth_token', { token: session.token });
    if (resumed.name !== 'response') throw new Error(`auth_token failed: ${JSON.stringify(resumed.args)}`);
    const overWs = await time('agent over WebSocket (auth_token)', async () => {
      const reply = await client.call('systemmanager', 'procinfo');
      if (reply.name !== 'response') throw new Error(JSON.stringify(reply.args));
    });
    console.log(`ratio in-process / direct:  ${(inProcess / direct).toFixed(2)}x`);
    console.log(`ratio WebSocket / direct:   ${(overWs / direct).toFixed(2)}x`);
  } finally {
    client.close();
  }
} finally {
  await agent.dispose();
}
