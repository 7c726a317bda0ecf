/**
 * Runs the `hostadm call` bundle (one CommonJS file made by scripts/bundle-cli.ts: `cli/src/call.cjs`
 * in the npm package, `client/cli/.call-bundle/` in the repository when fresh, see below) with a V8
 * code cache of its own, kept beside Node's compile cache.
 *
 * Why not Node's compile cache (NODE_COMPILE_CACHE, which the bin wrapper turns on): it stores the code
 * V8 compiled when a module was compiled, which is its top level only; every function that runs later
 * (commander's parsing, zod's schema constructors, ws, the SDK, the channel) is parsed and compiled
 * again by every command. A cache made after the call ran (`vm.Script#createCachedData`) holds those
 * functions too: about a quarter of a bridged call's instructions (callgrind, test/bench/bridged-call).
 *
 * The cache is only an optimisation and is never trusted beyond what V8 checks itself (its version,
 * flags and the source's length) plus the bundle's content hash, which the bundle's first line carries
 * (`/* hostadm-call-bundle <sha256 prefix> *\/`) and which names the cache file: a changed bundle never
 * meets an old cache. It is written once, at exit, when it was missing or refused, as a fresh file
 * renamed into place (0600); errors writing it are ignored. NODE_DISABLE_COMPILE_CACHE=1, or no
 * NODE_COMPILE_CACHE (the bin wrapper sets it), runs the bundle without one.
 * CommonJS and built-in modules only, like main.cts: this runs before the ES module loader would.
 */
const { readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } = require('node:fs') as typeof import('node:fs');
const { createRequire } = require('node:module') as typeof import('node:module');
const { dirname, join } = require('node:path') as typeof import('node:path');
const vm = require('node:vm') as typeof import('node:vm');
const diagnostics = require('node:diagnostics_channel') as typeof import('node:diagnostics_channel');

interface CallBundle {
  runCallProgram(argv: readonly string[]): Promise<void>;
}

/**
 * A cache from a run that never connected (`hostadm call --help`, a usage error) lacks the connection's
 * code, so it is replaced by the first run that does connect; a `connected` one is kept.
 */
type CacheLevel = 'connected' | 'local';

const HEADER = /^\/\* hostadm-call-bundle ([0-9a-f]{16,64}) \*\/\n/;

function cacheDir(): string | undefined {
  const dir = process.env.NODE_COMPILE_CACHE;
  if (!dir || process.env.NODE_DISABLE_COMPILE_CACHE === '1') return undefined;
  return dir;
}

function readCache(dir: string, prefix: string): { data: Buffer; level: CacheLevel } | undefined {
  for (const level of ['connected', 'local'] as const) {
    try {
      return { data: readFileSync(join(dir, `${prefix}-${level}.v8`)), level };
    } catch {
      // none at this level
    }
  }
  return undefined;
}

function writeCache(dir: string, prefix: string, level: CacheLevel, data: Buffer): void {
  try {
    const final = join(dir, `${prefix}-${level}.v8`);
    const fresh = `${final}.${process.pid}.tmp`;
    writeFileSync(fresh, data, { mode: 0o600 });
    renameSync(fresh, final);
    // Caches of other bundles (an earlier version) or of a lower level are of no more use.
    for (const name of readdirSync(dir)) {
      if (name.startsWith('hostadm-call-') && name.endsWith('.v8') && join(dir, name) !== final) rmSync(join(dir, name), { force: true });
    }
  } catch {
    // A read-only or full cache directory: the next run compiles again, nothing else changes.
  }
}

/**
 * The repository layout's copy of the same bundle (scripts/build-call-bundle.ts, run by `npm ci` and
 * `npm install`), kept in `client/cli/.call-bundle/` with a manifest of the files it was made from:
 * each one's path (relative to the repository), size, mtime and ctime. The bundle is used only when
 * every one of them is as it was: an edited, replaced, touched or removed source (ctime moves on any
 * write, whatever mtime a tool sets) sends `hostadm call` back to the sources, never to a stale
 * bundle. About 200 stat calls, ~1 ms of CPU: loading the sources instead costs ~80 ms.
 */
const REPOSITORY_BUNDLE_DIR = 'client/cli/.call-bundle';

/** A file as the manifest records it: path relative to the repository, size, mtimeMs, ctimeMs. */
type FileStamp = [path: string, size: number, mtimeMs: number, ctimeMs: number];

interface BundleManifest {
  /** The bundle's file name in REPOSITORY_BUNDLE_DIR (`call-<content hash>.cjs`). */
  bundle: string;
  inputs: FileStamp[];
}

function isFileStamp(value: unknown): value is FileStamp {
  return (
    Array.isArray(value) &&
    value.length === 4 &&
    typeof value[0] === 'string' &&
    typeof value[1] === 'number' &&
    typeof value[2] === 'number' &&
    typeof value[3] === 'number'
  );
}

function stampOf(root: string, path: string): FileStamp | undefined {
  // Concatenated, not path.join: ~200 joins cost as much CPU as the stat calls themselves.
  const stats = statSync(`${root}/${path}`, { throwIfNoEntry: false });
  return stats?.isFile() ? [path, stats.size, stats.mtimeMs, stats.ctimeMs] : undefined;
}

function isUnchanged([path, size, mtimeMs, ctimeMs]: FileStamp, root: string): boolean {
  const now = stampOf(root, path);
  return now !== undefined && now[1] === size && now[2] === mtimeMs && now[3] === ctimeMs;
}

/** The repository's call bundle when it was made from the sources as they are now, else undefined (run the sources). */
function freshRepositoryBundle(root: string): string | undefined {
  const dir = join(root, REPOSITORY_BUNDLE_DIR);
  let manifest: unknown;
  try {
    manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8'));
  } catch {
    return undefined; // never built (no `npm ci` yet), or unreadable
  }
  if (typeof manifest !== 'object' || manifest === null) return undefined;
  const { bundle, inputs } = manifest as Partial<BundleManifest>;
  if (typeof bundle !== 'string' || !/^call-[0-9a-f]{16,64}\.cjs$/.test(bundle) || !Array.isArray(inputs) || inputs.length === 0) return undefined;
  for (const input of inputs) if (!isFileStamp(input) || !isUnchanged(input, root)) return undefined;
  return join(dir, bundle);
}

/**
 * Loads and runs the bundle; `hostadm call`'s exit code and output are the bundle's own. False, having
 * run nothing, when the file cannot be read (a repository bundle a newer build just replaced).
 */
function runCallBundle(bundle: string, argv: readonly string[]): boolean {
  let source: string;
  try {
    source = readFileSync(bundle, 'latin1');
  } catch {
    return false;
  }
  const id = HEADER.exec(source)?.[1];
  const dir = id === undefined ? undefined : cacheDir();
  const prefix = `hostadm-call-${id}-${process.version}-${process.arch}`;
  const cached = dir === undefined ? undefined : readCache(dir, prefix);
  const script = new vm.Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, {
    filename: bundle,
    cachedData: cached?.data,
    importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
  });
  if (dir !== undefined && (cached === undefined || script.cachedDataRejected === true || cached.level === 'local')) {
    let level: CacheLevel = 'local';
    const connected = () => (level = 'connected');
    diagnostics.subscribe('net.client.socket', connected);
    process.once('exit', () => {
      diagnostics.unsubscribe('net.client.socket', connected);
      if (cached === undefined || script.cachedDataRejected === true || level === 'connected') writeCache(dir, prefix, level, script.createCachedData());
    });
  }
  const module = { exports: {} as CallBundle };
  (script.runInThisContext() as (...args: unknown[]) => void).call(module.exports, module.exports, createRequire(bundle), module, bundle, dirname(bundle));
  module.exports.runCallProgram(argv).catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
  return true;
}
module.exports = { runCallBundle, freshRepositoryBundle, stampOf, REPOSITORY_BUNDLE_DIR };
