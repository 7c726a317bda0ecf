/**
 * Runs the `hostadm call` bundle (one CommonJS file made by scripts/bundle-cli.ts: `cli/src/call.cjs`
 * in the npm package, `client/cli/.call-bundle/` in the repository when fresh, see below) with a V8
 * code cache of its own, kept beside Node's compile cache; and its zod companion (`zod-<hash>.cjs`
 * beside it, which the bundle requires only where a module that imports zod is initialised: argument
 * checks, contracts, help) the same way, with a cache of its own.
 *
 * Why not Node's compile cache (NODE_COMPILE_CACHE, which the bin wrapper turns on): it stores the code
 * V8 compiled when a module was compiled, which is its top level only; every function that runs later
 * (commander's parsing, zod's schema constructors, ws, the SDK, the channel) is parsed and compiled
 * again by every command. A cache made after the call ran (`vm.Script#createCachedData`) holds those
 * functions too: about a quarter of a bridged call's instructions (callgrind, test/bench/bridged-call).
 *
 * A cache is only an optimisation and is never trusted beyond what V8 checks itself (its version,
 * flags and the source's length) plus the file's content hash, which its first line carries
 * (`/* hostadm-call-bundle <sha256 prefix> *\/`, `/* hostadm-call-zod <sha256 prefix> *\/`) and which
 * names the cache file: a changed file never meets an old cache. It is written once, at exit, when it
 * was missing or refused, as a fresh file renamed into place (0600); errors writing it are ignored.
 * NODE_DISABLE_COMPILE_CACHE=1, or no NODE_COMPILE_CACHE (the bin wrapper sets it), runs both without.
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

/** A CommonJS file's body as vm.Script compiles it: Node's module wrapper. */
type ModuleFunction = (this: unknown, exports: unknown, require: NodeJS.Require, module: { exports: unknown }, filename: string, dirname: string) => void;

/**
 * How much of the bundle a cache's run compiled, least first: `local` never connected (`hostadm call
 * --help`, a usage error); `connected` made a call; `checked` made one with arguments, so the cache
 * also holds their checks (the zod companion's cache is `connected` at most: zod runs only to check).
 * A cache is replaced by the first run that reaches a higher level, then kept: whichever call comes
 * first after an install, the calls with arguments do not compile their checks again each time.
 */
const CACHE_LEVELS = ['local', 'connected', 'checked'] as const;
type CacheLevel = (typeof CACHE_LEVELS)[number];

/**
 * The two files run this way, each with its header and the prefix of its cache files' names (a file's
 * clean-up removes only caches of its own kind: the companion's cache outlives a new bundle and the
 * other way round, as the files themselves do).
 */
const KINDS = {
  bundle: { header: /^\/\* hostadm-call-bundle ([0-9a-f]{16,64}) \*\/\n/, cache: 'hostadm-call-' },
  zod: { header: /^\/\* hostadm-call-zod ([0-9a-f]{16,64}) \*\/\n/, cache: 'hostadm-zod-' },
} as const;
type Kind = keyof typeof KINDS;

/** How the bundle names its zod companion (scripts/bundle-cli.ts): beside it, by content hash. */
const ZOD_COMPANION = /^\.\/zod-[0-9a-f]{16,64}\.cjs$/;

function cacheDir(): string | undefined {
  const dir = process.env.NODE_COMPILE_CACHE;
  if (!dir || process.env.NODE_DISABLE_COMPILE_CACHE === '1') return undefined;
  return dir;
}

function readCache(dir: string, prefix: string): { data: Buffer; level: CacheLevel } | undefined {
  for (const level of [...CACHE_LEVELS].reverse()) {
    try {
      return { data: readFileSync(join(dir, `${prefix}-${level}.v8`)), level };
    } catch {
      // none at this level
    }
  }
  return undefined;
}

function writeCache(dir: string, kind: Kind, prefix: string, level: CacheLevel, data: Buffer): void {
  try {
    const final = join(dir, `${prefix}-${level}.v8`);
    const fresh = `${final}.${process.pid}.tmp`;
    writeFileSync(fresh, data, { mode: 0o600 });
    renameSync(fresh, final);
    // Caches of other files of this kind (an earlier version) or of a lower level are of no more use.
    for (const name of readdirSync(dir)) {
      if (name.startsWith(KINDS[kind].cache) && name.endsWith('.v8') && join(dir, name) !== final) rmSync(join(dir, name), { force: true });
    }
  } catch {
    // A read-only or full cache directory: the next run compiles again, nothing else changes.
  }
}

/**
 * The repository layout's copy of the same bundle (scripts/build-call-bundle.ts, run by `npm ci` and
 * `npm install`), kept in `client/cli/.call-bundle/` with its zod companion and a manifest of the
 * files they were made from: each one's path (relative to the repository), size, mtime and ctime,
 * and the companion's own stamp. The bundle is used only when every one of them is as it was: an
 * edited, replaced, touched or removed source (ctime moves on any write, whatever mtime a tool sets)
 * or companion sends `hostadm call` back to the sources, never to a stale bundle. About 200 stat
 * calls, ~1 ms of CPU: loading the sources instead costs ~80 ms.
 */
const REPOSITORY_BUNDLE_DIR = 'client/cli/.call-bundle';

/** A file as the manifest records it: path relative to the repository, size, mtimeMs, ctimeMs. */
type FileStamp = [path: string, size: number, mtimeMs: number, ctimeMs: number];

interface BundleManifest {
  /** The bundle's file name in REPOSITORY_BUNDLE_DIR (`call-<content hash>.cjs`). */
  bundle: string;
  /** The zod companion the bundle requires, as written beside it (`<REPOSITORY_BUNDLE_DIR>/zod-<content hash>.cjs`). */
  companion: FileStamp;
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

/** Where the manifest's companion must be: in REPOSITORY_BUNDLE_DIR, named as the bundle requires it. */
const COMPANION_PATH = /^client\/cli\/\.call-bundle\/zod-[0-9a-f]{16,64}\.cjs$/;

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
  const { bundle, companion, inputs } = manifest as Partial<BundleManifest>;
  if (typeof bundle !== 'string' || !/^call-[0-9a-f]{16,64}\.cjs$/.test(bundle) || !Array.isArray(inputs) || inputs.length === 0) return undefined;
  if (!isFileStamp(companion) || !COMPANION_PATH.test(companion[0]) || !isUnchanged(companion, root)) return undefined;
  for (const input of inputs) if (!isFileStamp(input) || !isUnchanged(input, root)) return undefined;
  return join(dir, bundle);
}

/** Whether this process opened a TCP connection: a cache made at its exit is then a `connected` one. */
let connected = false;
/** Whether this process loaded the zod companion, i.e. checked a call's arguments (`checked`, if it connected too). */
let checkedArguments = false;
let watchingConnections = false;

function watchConnections(): void {
  if (watchingConnections) return;
  watchingConnections = true;
  const onSocket = () => {
    connected = true;
    diagnostics.unsubscribe('net.client.socket', onSocket);
  };
  diagnostics.subscribe('net.client.socket', onSocket);
}

/**
 * `file` compiled with its code cache (of `kind`), and the cache written at exit when it was missing,
 * refused or `local` and this run connected. Undefined, having compiled nothing, when the file cannot
 * be read.
 */
function compileCached(file: string, kind: Kind): ModuleFunction | undefined {
  let source: string;
  try {
    source = readFileSync(file, 'latin1');
  } catch {
    return undefined;
  }
  const id = KINDS[kind].header.exec(source)?.[1];
  const dir = id === undefined ? undefined : cacheDir();
  const prefix = `${KINDS[kind].cache}${id}-${process.version}-${process.arch}`;
  const cached = dir === undefined ? undefined : readCache(dir, prefix);
  const script = new vm.Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, {
    filename: file,
    cachedData: cached?.data,
    importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
  });
  const refused = cached === undefined || script.cachedDataRejected === true;
  const highest: CacheLevel = kind === 'zod' ? 'connected' : 'checked';
  if (dir !== undefined && (refused || cached.level !== highest)) {
    watchConnections();
    process.once('exit', () => {
      const reached: CacheLevel = !connected ? 'local' : checkedArguments && highest === 'checked' ? 'checked' : 'connected';
      if (refused || CACHE_LEVELS.indexOf(reached) > CACHE_LEVELS.indexOf(cached?.level ?? 'local')) writeCache(dir, kind, prefix, reached, script.createCachedData());
    });
  }
  return script.runInThisContext() as ModuleFunction;
}

/** Runs a compiled CommonJS file as Node would, with `require` as given; its exports. */
function runModule(run: ModuleFunction, file: string, require: NodeJS.Require): unknown {
  const module = { exports: {} as unknown };
  run.call(module.exports, module.exports, require, module, file, dirname(file));
  return module.exports;
}

/**
 * The bundle's `require`: Node's, except for its zod companion, which is compiled with its own cache
 * (Node's require would cache its top level alone, so zod's functions would be compiled again by
 * every call that checks arguments) and loaded once per process, whichever module asks first.
 */
function bundleRequire(bundle: string): NodeJS.Require {
  const nodeRequire = createRequire(bundle);
  const companions = new Map<string, unknown>();
  const require = (id: string): unknown => {
    if (!ZOD_COMPANION.test(id)) return nodeRequire(id);
    const file = join(dirname(bundle), id);
    if (!companions.has(file)) {
      const run = compileCached(file, 'zod');
      if (run === undefined) throw new Error(`hostadm call: cannot read ${file}, the zod its bundle needs (reinstall hostadm; in a checkout, \`npm run build:call\`)`);
      // Beside the bundle: Node's require for the bundle's folder is the companion's too (zod needs none).
      companions.set(file, runModule(run, file, nodeRequire));
      checkedArguments = true;
    }
    return companions.get(file);
  };
  return Object.assign(require, { resolve: nodeRequire.resolve, cache: nodeRequire.cache, extensions: nodeRequire.extensions, main: nodeRequire.main });
}

/**
 * Loads and runs the bundle; `hostadm call`'s exit code and output are the bundle's own. False, having
 * run nothing, when the file cannot be read (a repository bundle a newer build just replaced).
 */
function runCallBundle(bundle: string, argv: readonly string[]): boolean {
  // From the start: the companion may be compiled after the call connected, and its cache's level must say so.
  if (cacheDir() !== undefined) watchConnections();
  const run = compileCached(bundle, 'bundle');
  if (run === undefined) return false;
  const exports = runModule(run, bundle, bundleRequire(bundle)) as CallBundle;
  exports.runCallProgram(argv).catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
  return true;
}
module.exports = { runCallBundle, freshRepositoryBundle, stampOf, REPOSITORY_BUNDLE_DIR };
