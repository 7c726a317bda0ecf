/**
 * `hostadm completion bash|zsh|fish` through the real binary: each script loads in its own shell and
 * completes what a user types (`hostadm call sys<Tab>` offers systemmanager), from the contracts;
 * `hostadm completion markdown` is docs/cli.md, and a stale committed file fails here. zsh and fish
 * are tested where installed (.ci/run installs them), and skip saying so where not.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { classNames } from '../../client/sdk/src/contracts.ts';
import { runCli, show } from './cli-support.ts';

const root = new URL('../..', import.meta.url).pathname;
const has = (shell: string) => spawnSync(shell, ['-c', 'exit 0']).status === 0;

async function script(shell: string): Promise<string> {
  const r = await runCli(['completion', shell], {});
  assert.equal(r.code, 0, show(r));
  const dir = mkdtempSync(join(tmpdir(), 'hostadm-completion-'));
  const file = join(dir, `hostadm.${shell}`);
  writeFileSync(file, r.stdout);
  return file;
}

/** Runs a shell program with the script's path as $1; stdout lines. */
function inShell(shell: string, program: string, file: string, args: string[] = []): string[] {
  const r = spawnSync(shell, shell === 'fish' ? ['--no-config', '-c', program, file, ...args] : ['-c', program, shell, file, ...args], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  assert.equal(r.status, 0, `${shell}: exit ${r.status}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`);
  assert.equal(r.stderr, '', `${shell} printed errors`);
  return r.stdout.replace(/\n$/, '').split('\n');
}

const BASH_COMPLETE = 'source "$1"; shift; for line; do COMP_LINE=$line; COMP_POINT=${#line}; COMPREPLY=(); _hostadm; echo "${COMPREPLY[*]}"; done';

test('bash: the script loads and completes commands, classes, actions and arguments from the contracts', async (t) => {
  const file = await script('bash');
  t.after(() => rmSync(join(file, '..'), { recursive: true, force: true }));
  const [sys, allTargets, action, arg, bridge, option, shells] = inShell('bash', BASH_COMPLETE, file, [
    'hostadm call sys',
    'hostadm call ',
    'hostadm call systemmanager kill',
    'hostadm call systemmanager killproc pid=1 sig',
    'hostadm bridge keys ',
    'hostadm ps --sor',
    'hostadm completion ',
  ]);
  assert.equal(sys, 'systemmanager');
  const targets = (allTargets ?? '').split(' ');
  for (const name of [...classNames('admin'), ...classNames('rpc').map((n) => `rpc/${n}`), 'rpc/identify', 'rpc/query'])
    assert.ok(targets.includes(name), `hostadm call <Tab> offers ${name}`);
  assert.ok(!targets.includes('rpc/auth'), 'sign-in operations are not offered');
  assert.equal(action, 'killproc');
  assert.equal(arg, 'signal=');
  assert.equal(bridge, 'list revoke');
  assert.equal(option, '--sort');
  assert.equal(shells, 'bash zsh fish markdown');
});

test('bash: after an option that takes a value the next word is that value, not a command', async (t) => {
  const file = await script('bash');
  t.after(() => rmSync(join(file, '..'), { recursive: true, force: true }));
  // --json takes a value after `call` (so `{}` is not the class); after `ps` it is a flag.
  const [afterJson, valueItself] = inShell('bash', BASH_COMPLETE, file, ['hostadm call --json {} sys', 'hostadm call --profile ']);
  assert.equal(afterJson, 'systemmanager');
  assert.equal(valueItself, '', 'an option value is left to file completion');
});

test('zsh: the script registers with compinit and offers classes and arguments with their descriptions', {
  skip: has('zsh') ? false : 'zsh is not installed (.ci/run installs it as root)',
}, async (t) => {
  const file = await script('zsh');
  t.after(() => rmSync(join(file, '..'), { recursive: true, force: true }));
  const dump = join(file, '..', 'zcompdump');
  const [registered] = inShell('zsh', `autoload -U compinit && compinit -u -d ${dump} && source "$1" && print -r -- $_comps[hostadm]`, file);
  assert.equal(registered, '_hostadm');
  // compsys's own matching needs a terminal; here _describe and _files print what the script hands them.
  const program = `_describe() { print -rl -- "\${(@P)4}"; }; _files() { print FILES; }; compdef() { :; }; source "$1"
    words=(hostadm call sys); CURRENT=3; _hostadm; print -- --
    words=(hostadm call systemmanager killproc ''); CURRENT=5; _hostadm; print -- --
    words=(hostadm ps --profile ''); CURRENT=4; _hostadm`;
  const out = inShell('zsh', program, file).join('\n').split('\n--\n');
  const classes = (out[0] ?? '').split('\n').filter((l) => l.startsWith('sys'));
  assert.deepEqual(
    classes.map((l) => l.split(':')[0]),
    ['systemmanager'],
  );
  assert.match(classes[0] ?? '', /^systemmanager:\S/, 'with its description');
  assert.deepEqual(
    (out[1] ?? '').split('\n').map((l) => l.split(':')[0]),
    ['pid=', 'signal='],
  );
  assert.equal(out[2], 'FILES');
});

test('fish: the script loads and `hostadm call sys` completes to systemmanager', {
  skip: has('fish') ? false : 'fish is not installed (.ci/run installs it as root)',
}, async (t) => {
  const file = await script('fish');
  t.after(() => rmSync(join(file, '..'), { recursive: true, force: true }));
  const lines = inShell('fish', `source $argv[1]; complete -C'hostadm call sys'; echo next; complete -C'hostadm call systemmanager killproc '`, file);
  const split = lines.indexOf('next');
  assert.deepEqual(
    lines.slice(0, split).map((l) => l.split('\t')[0]),
    ['systemmanager'],
  );
  assert.match(lines[0] ?? '', /^systemmanager\t\S/, 'with its description');
  assert.deepEqual(
    lines.slice(split + 1).map((l) => l.split('\t')[0]),
    ['pid=', 'signal='],
  );
});

test('an unknown shell is a usage error that lists the ones there are', async () => {
  const r = await runCli(['completion', 'tcsh'], {});
  assert.equal(r.code, 2, show(r));
  assert.match(r.stderr, /bash, zsh, fish, markdown|bash.*zsh.*fish/);
  assert.equal(r.stdout, '');
});

test('docs/cli.md is what `npm run docs:cli` writes now (run it after changing a command or a contract)', async () => {
  const r = await runCli(['completion', 'markdown'], {});
  assert.equal(r.code, 0, show(r));
  assert.ok(r.stdout.includes('### systemmanager') && r.stdout.includes('### hostadm agent'), 'the reference covers commands and classes');
  assert.equal(readFileSync(join(root, 'docs/cli.md'), 'utf8'), r.stdout, 'docs/cli.md is stale: run npm run docs:cli');
});
