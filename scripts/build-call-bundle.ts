/**
 * The repository layout's `hostadm call` bundle: the same one CommonJS file the npm package runs
 * (bundle-cli.ts), written to `client/cli/.call-bundle/call-<hash>.cjs` beside its zod companion
 * (`zod-<hash>.cjs`) with a manifest of every file they were made from (size, mtime, ctime) and of the
 * companion itself, so `client/bin/hostadm` in a checkout runs a call without
 * loading ~160 TypeScript modules through the ES module loader (client/cli/README.md, "Start-up").
 * `npm ci` and `npm install` run it (the root package's `prepare`); `npm run build:call` by hand.
 *
 * The CLI checks the manifest on each `hostadm call` (lib/call-bundle.cts, freshRepositoryBundle) and
 * runs the sources as soon as one input differs, so an edit is never shadowed by an old bundle; this
 * script brings the bundle back in line. A source edited while the bundle was being made leaves no
 * manifest (the next build makes one). Concurrent builds are safe: the bundle's and the companion's
 * names are their content hashes and the manifest that names them is renamed into place whole.
 *
 * `node scripts/build-call-bundle.ts` builds when stale; `--force` always; `--best-effort` (prepare)
 * reports a failure on stderr and exits 0: the CLI then runs from the sources, as before.
 */
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { buildCallBundle } from './bundle-cli.ts';

type FileStamp = [path: string, size: number, mtimeMs: number, ctimeMs: number];
interface CallBundleModule {
  freshRepositoryBundle(root: string): string | undefined;
  stampOf(root: string, path: string): FileStamp | undefined;
  REPOSITORY_BUNDLE_DIR: string;
}

const defaultRoot = new URL('..', import.meta.url).pathname;
const callBundle = createRequire(import.meta.url)('../client/cli/src/lib/call-bundle.cts') as CallBundleModule;

/**
 * What the bundle depends on beyond the files esbuild reads: how it is made (these scripts, esbuild
 * itself) and the version it has built in (client/package.json).
 */
const BUILD_INPUTS = ['scripts/bundle-cli.ts', 'scripts/build-call-bundle.ts', 'client/package.json', 'node_modules/esbuild/package.json'];

/**
 * An edit this close before the build started may carry a ctime just under it (the kernel stamps files
 * from a coarse clock, a tick behind): treated as made during the build.
 */
const CLOCK_SLACK_MS = 20;

function sameBytes(path: string, bytes: Buffer): boolean {
  try {
    return readFileSync(path).equals(bytes);
  } catch {
    return false;
  }
}

export type CallBundleResult = 'fresh' | 'built' | 'sources-changed';

/** Builds the repository's call bundle unless it is fresh. Throws when bundling fails. */
export async function ensureCallBundle(options: { force?: boolean; root?: string } = {}): Promise<CallBundleResult> {
  const root = options.root ?? defaultRoot;
  if (!options.force && callBundle.freshRepositoryBundle(root) !== undefined) return 'fresh';
  const started = Date.now();
  const version = (JSON.parse(readFileSync(join(root, 'client/package.json'), 'utf8')) as { version: string }).version;
  const { code, companion, inputs } = await buildCallBundle(root, version);
  const stamps: FileStamp[] = [];
  for (const path of [...new Set([...inputs, ...BUILD_INPUTS])].sort()) {
    const stamp = callBundle.stampOf(root, path);
    if (stamp === undefined) throw new Error(`${path}, an input of the call bundle, is not a file`);
    // Changed while esbuild read it, or after: the bundle may hold the old text. No manifest, no shadowing.
    if (stamp[3] >= started - CLOCK_SLACK_MS) return 'sources-changed';
    stamps.push(stamp);
  }
  const dir = join(root, callBundle.REPOSITORY_BUNDLE_DIR);
  mkdirSync(dir, { recursive: true });
  const id = /^\/\* hostadm-call-bundle ([0-9a-f]+) \*\//.exec(code.toString('latin1', 0, 100))?.[1];
  if (id === undefined) throw new Error('the call bundle has no hash header');
  const bundle = `call-${id}.cjs`;
  const fresh = (name: string) => join(dir, `${name}.${process.pid}.tmp`);
  const place = (name: string, bytes: Buffer) => {
    writeFileSync(fresh(name), bytes);
    renameSync(fresh(name), join(dir, name));
  };
  // The companion changes only with zod, esbuild or these scripts: one with the same bytes is kept as it
  // is, so its stamp (and a call that checked it a moment ago) stays good.
  if (!sameBytes(join(dir, companion.name), companion.code)) place(companion.name, companion.code);
  const companionStamp = callBundle.stampOf(root, `${callBundle.REPOSITORY_BUNDLE_DIR}/${companion.name}`);
  if (companionStamp === undefined) throw new Error(`${companion.name} was removed as it was written`);
  place(bundle, code);
  place('manifest.json', Buffer.from(`${JSON.stringify({ bundle, companion: companionStamp, inputs: stamps })}\n`));
  // Earlier bundles and companions: a `hostadm call` that chose one just now has read it already or
  // falls back to the sources; one that needs the companion it checked later and finds it removed says so.
  for (const name of readdirSync(dir)) {
    const old = (name.startsWith('call-') && name !== bundle) || (name.startsWith('zod-') && name !== companion.name);
    if (old && name.endsWith('.cjs')) rmSync(join(dir, name), { force: true });
  }
  return 'built';
}

if (import.meta.main) {
  const bestEffort = process.argv.includes('--best-effort');
  try {
    const result = await ensureCallBundle({ force: process.argv.includes('--force') });
    const dir = callBundle.REPOSITORY_BUNDLE_DIR;
    console.error(
      result === 'fresh'
        ? `hostadm call bundle up to date: ${dir}`
        : result === 'built'
          ? `hostadm call bundle built: ${dir}`
          : `hostadm call bundle not kept: sources changed while it was made; \`hostadm call\` runs from the sources until \`npm run build:call\``,
    );
  } catch (err) {
    console.error(`hostadm call bundle not built (${(err as Error).message}); \`hostadm call\` runs from the sources`);
    if (!bestEffort) process.exit(1);
  }
}
