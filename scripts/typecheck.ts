/** Type-checks each workspace with its own settings (shared has no Node or DOM types). */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const tsc = join(root, 'node_modules/typescript/bin/tsc');
let failed = false;
// A workspace with no sources yet (the bridge before its issue lands) has nothing to check.
// bridge/tsconfig.core.json re-checks the relay core without Node types (what Workers runs).
const projects = ['shared', 'agent', 'bridge', 'bridge/tsconfig.core.json', 'client', 'tsconfig.test.json'].filter(
  (p) => p.endsWith('.json') || existsSync(join(root, p, 'src')) || existsSync(join(root, p, 'cli')),
);
for (const project of projects) {
  const result = spawnSync(process.execPath, [tsc, '-p', project], { stdio: 'inherit', cwd: root });
  if (result.status !== 0) {
    console.error(`type check failed: ${project}`);
    failed = true;
  }
}
process.exit(failed ? 1 : 0);
