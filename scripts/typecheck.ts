/**
 * `npm run check`: Biome's linter and formatter check over every TypeScript file (biome.json says which
 * rules are off and why), then each workspace type-checked with its own settings (shared has no Node
 * or DOM types), two projects at a time (the machines have two cores; each tsc is single-threaded).
 * `npm run format` applies the formatter and the linter's safe fixes.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const tsc = join(root, 'node_modules/typescript/bin/tsc');
// A workspace with no sources yet (the bridge before its issue lands) has nothing to check.
// bridge/tsconfig.core.json re-checks the relay core without Node types (what Workers runs);
// bridge/tsconfig.workers*.json check the Workers runtime and its in-workerd tests with Workers types.
const projects = [
  'tsconfig.test.json',
  'agent',
  'client',
  'bridge',
  'shared',
  'console',
  'console/tsconfig.server.json',
  'bridge/tsconfig.core.json',
  'bridge/tsconfig.workers.json',
  'bridge/tsconfig.workers-test.json',
].filter((p) => p.endsWith('.json') || existsSync(join(root, p, 'src')) || existsSync(join(root, p, 'cli')));

function check(project: string): Promise<boolean> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [tsc, '-p', project], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.once('close', (code) => {
      // Whole reports, not interleaved lines.
      if (out) process.stdout.write(out);
      if (code !== 0) console.error(`type check failed: ${project}`);
      resolve(code === 0);
    });
  });
}

// Biome is one native binary (from the registry, @biomejs/cli-*) and takes well under a second.
const biome = spawnSync(join(root, 'node_modules/.bin/biome'), ['check', '--diagnostic-level=error', root], { cwd: root, stdio: 'inherit' });
if (biome.status !== 0) console.error('lint or format check failed: run npm run format, then fix what remains');

const queue = [...projects];
let failed = biome.status !== 0;
await Promise.all(
  Array.from({ length: Math.min(2, availableParallelism()) }, async () => {
    for (let p = queue.shift(); p !== undefined; p = queue.shift()) if (!(await check(p))) failed = true;
  }),
);
process.exit(failed ? 1 : 0);
