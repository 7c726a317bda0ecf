/**
 * type-stripper-restart.ts in a real process: a TypeScript program started with a cold compile cache
 * loads Node's type stripper, then starts again in place (same pid, arguments, standard streams) and
 * runs without it; with a warm cache, or with the compile cache off, it runs once.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const restartModule = new URL('./type-stripper-restart.ts', import.meta.url).href;

function program(dir: string): string {
  const file = join(dir, 'long-running.ts');
  writeFileSync(
    file,
    [
      `import { restartWithoutTypeStripper, shouldRestartWithoutTypeStripper } from ${JSON.stringify(restartModule)};`,
      'const stripper: boolean = (process as unknown as { moduleLoadList: string[] }).moduleLoadList.includes("NativeModule internal/deps/amaro/dist/index");',
      'console.log(JSON.stringify({ pid: process.pid, stripper, args: process.argv.slice(2) }));',
      'if (shouldRestartWithoutTypeStripper()) restartWithoutTypeStripper();',
      'console.log(JSON.stringify({ done: true, mark: process.env.HOSTADM_RESTARTED_WITHOUT_TYPE_STRIPPER ?? null }));',
    ].join('\n'),
  );
  return file;
}

function run(file: string, env: NodeJS.ProcessEnv): Array<Record<string, unknown>> {
  const result = spawnSync(process.execPath, ['--disable-warning=ExperimentalWarning', file, 'an', 'argument'], { env, encoding: 'utf8' });
  assert.equal(result.status, 0, result.stderr);
  return result.stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

test('cold compile cache: the stripper is loaded, the process starts again in place without it; warm: one run, no stripper', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'hostadm-restart-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = program(dir);
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_COMPILE_CACHE: join(dir, 'cache') };
  delete env.HOSTADM_RESTARTED_WITHOUT_TYPE_STRIPPER;
  const cold = run(file, env);
  assert.equal(cold.length, 3, JSON.stringify(cold));
  assert.deepEqual(cold[0], { pid: cold[0]!.pid, stripper: true, args: ['an', 'argument'] });
  assert.deepEqual(cold[1], { pid: cold[0]!.pid, stripper: false, args: ['an', 'argument'] }, 'same process, same arguments, no stripper');
  assert.deepEqual(cold[2], { done: true, mark: null }, 'the mark is not passed on');
  const warm = run(file, env);
  assert.deepEqual(
    warm.map((line) => ('stripper' in line ? line.stripper : line.done)),
    [false, true],
  );
});

test('compile cache off: the program runs once, with the stripper', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'hostadm-restart-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_DISABLE_COMPILE_CACHE: '1' };
  delete env.NODE_COMPILE_CACHE;
  delete env.HOSTADM_RESTARTED_WITHOUT_TYPE_STRIPPER;
  const once = run(program(dir), env);
  assert.equal(once.length, 2, JSON.stringify(once));
  assert.equal(once[0]!.stripper, true);
});
