/**
 * Builds the web console (console/ → console/dist) with Vite when its inputs changed since the last
 * build, so every command that needs the built files gets them with no manual step: `npm start`,
 * `npm test` and `npm run build` run it first (pre-scripts), `npm ci` runs it (prepare), and the
 * workerd helper checks for it before `wrangler dev` serves the files as static assets.
 *
 * The inputs are the console's sources and everything it bundles (the SDK and shared/); their content
 * hash is kept in console/.build-stamp. A lock directory keeps concurrent callers (test files running
 * in parallel) from building over each other: the others wait for the first one.
 *
 * `node scripts/build-console.ts` builds if stale; `--force` always builds.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, globSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { compressAsset, isCompressible } from '../console/server/assets.ts';

const root = new URL('..', import.meta.url).pathname;
const consoleDir = join(root, 'console');
export const CONSOLE_DIST = join(consoleDir, 'dist');
const STAMP = join(consoleDir, '.build-stamp');
const LOCK = join(consoleDir, '.build-lock');
const INPUTS = [
  'console/src/**/*',
  'console/public/**/*',
  'console/index.html',
  'console/vite.config.ts',
  'console/server/headers.ts',
  'console/server/assets.ts',
  'scripts/build-console.ts',
  'console/package.json',
  'client/sdk/src/**/*.ts',
  'shared/src/**/*.ts',
  'package-lock.json',
];

function inputsHash(): string {
  const hash = createHash('sha256');
  const files = [...new Set(INPUTS.flatMap((p) => globSync(p, { cwd: root })))].filter((f) => !f.endsWith('.test.ts')).sort();
  for (const file of files) {
    const path = join(root, file);
    if (!statSync(path).isFile()) continue;
    hash.update(file).update('\0').update(readFileSync(path)).update('\0');
  }
  return hash.digest('hex');
}

function isFresh(hash: string): boolean {
  return existsSync(join(CONSOLE_DIST, 'index.html')) && existsSync(STAMP) && readFileSync(STAMP, 'utf8').trim() === hash;
}

/**
 * Writes each servable file's brotli and gzip forms beside it (what console/server/assets.ts serves,
 * so a bridge start does not compress), and dist/.assetsignore so the Workers upload leaves them out
 * (Workers static assets compress on their own).
 */
function writeCompressedForms(dist: string): void {
  for (const rel of globSync('**/*', { cwd: dist })) {
    const path = join(dist, rel);
    if (rel.startsWith('_') || !statSync(path).isFile()) continue;
    const identity = readFileSync(path);
    if (!isCompressible(rel, identity.byteLength)) continue;
    const { br, gzip } = compressAsset(identity);
    writeFileSync(`${path}.br`, br);
    writeFileSync(`${path}.gz`, gzip);
  }
  writeFileSync(join(dist, '.assetsignore'), '*.br\n*.gz\n');
}

function sleep(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** Builds console/dist unless it is up to date; returns whether a build ran. Throws when the build fails. */
export function ensureConsoleBuilt(options: { force?: boolean; quiet?: boolean } = {}): boolean {
  const hash = inputsHash();
  if (!options.force && isFresh(hash)) return false;
  // One builder at a time; a lock older than two minutes belongs to a builder that died.
  for (;;) {
    try {
      mkdirSync(LOCK);
      break;
    } catch {
      const lock = statSync(LOCK, { throwIfNoEntry: false });
      if (lock && Date.now() - lock.mtimeMs > 120_000) rmSync(LOCK, { recursive: true, force: true });
      sleep(250);
      if (!options.force && isFresh(hash)) return false;
    }
  }
  try {
    const vite = join(root, 'node_modules/vite/bin/vite.js');
    const run = spawnSync(process.execPath, [vite, 'build', '--logLevel', options.quiet ? 'error' : 'warn'], { cwd: consoleDir, stdio: 'inherit' });
    if (run.status !== 0) throw new Error(`the console build failed (vite exited with ${run.status ?? run.signal})`);
    writeCompressedForms(CONSOLE_DIST);
    writeFileSync(STAMP, `${hash}\n`);
    return true;
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  try {
    const built = ensureConsoleBuilt({ force: process.argv.includes('--force') });
    console.error(built ? 'console built: console/dist' : 'console up to date: console/dist');
  } catch (err) {
    console.error((err as Error).message);
    process.exit(1);
  }
}
