/**
 * @module A long-running command started from the TypeScript sources (the repository layout) without a
 * warm compile cache has had Node load its type stripper (amaro: its 3.8 MB bundle, the swc wasm module
 * and its memory, about 16 MiB resident) to load its modules, and keeps it for the process's life.
 * Once they are loaded, they are in Node's compile cache (client/bin/hostadm enables it; Node caches
 * the stripped source as well as the compiled code): the command starts again in place
 * (`process.execve`: same pid, arguments, environment and standard streams) before it has started
 * or written anything, and loads every module from the cache, without the stripper. At most once;
 * only a cold start pays it (the modules load twice, the second time from the cache). A module the
 * command loads only later still needs the stripper then: load those first (`up` loads the sim platform).
 *
 * Nothing happens from compiled JavaScript (the npm package), with the compile cache off, or where
 * Node cannot tell (no `process.moduleLoadList`) or cannot replace the process (no `process.execve`).
 */
import { flushCompileCache, getCompileCacheDir } from 'node:module';

const STRIPPER = 'NativeModule internal/deps/amaro/dist/index';
const RESTARTED = 'HOSTADM_RESTARTED_WITHOUT_TYPE_STRIPPER';

/**
 * Whether this process loaded Node's type stripper and can start again without it: the compile cache
 * is on (the stripped modules are in it), Node can replace the process, and it has not done so already.
 */
export function shouldRestartWithoutTypeStripper(): boolean {
  // The mark is for this process alone, not for the commands it may run.
  const restarted = process.env[RESTARTED] !== undefined;
  delete process.env[RESTARTED];
  const loaded = (process as { moduleLoadList?: readonly string[] }).moduleLoadList;
  if (restarted || !Array.isArray(loaded) || !loaded.includes(STRIPPER)) return false;
  return getCompileCacheDir() !== undefined && typeof process.execve === 'function';
}

/** Writes the compile cache and replaces this process with the same command (same pid, arguments, environment, standard streams). */
export function restartWithoutTypeStripper(): never {
  flushCompileCache();
  process.execve!(process.execPath, [process.execPath, ...process.execArgv, ...process.argv.slice(1)], { ...process.env, [RESTARTED]: '1' });
  throw new Error('process.execve returned');
}
