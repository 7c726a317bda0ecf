/**
 * `node cgroup-exec.ts <dir>/cgroup.procs... -- <program> [args...]`: joins the given cgroups, then
 * becomes `program` (execve: same process, same PID). This is how `execjail` runs a command inside a
 * Linux jail's cgroups without a race: the process is in the jail's cgroups before `program` (nsenter,
 * and through it the user's command) runs at all, and everything it starts inherits them. Moving the
 * command's PID in after spawning would let it fork or allocate outside the limits first; nsenter has
 * no option for cgroups; cgexec (cgroup-tools) is rarely installed and knows only cgroup v1 names.
 * Run through the agent's runner as an argv (no shell); it takes only absolute `cgroup.procs` paths.
 */
import { accessSync, constants, writeFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';

function fail(message: string, code: number): never {
  process.stderr.write(`cgroup-exec: ${message}\n`);
  process.exit(code);
}

/** The program as execve needs it: a path, looked up on PATH when it has no `/`. */
function resolveProgram(program: string): string {
  if (program.includes('/')) return program;
  for (const dir of (process.env.PATH ?? '').split(':')) {
    if (dir === '') continue;
    const candidate = join(dir, program);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here: the next directory
    }
  }
  return fail(`${program}: not found on PATH`, 127);
}

const args = process.argv.slice(2);
const split = args.indexOf('--');
if (split < 0 || split === args.length - 1) fail('usage: cgroup-exec <dir>/cgroup.procs... -- <program> [args...]', 2);
const procsFiles = args.slice(0, split);
const [program, ...programArgs] = args.slice(split + 1) as [string, ...string[]];
for (const file of procsFiles) {
  if (!isAbsolute(file) || !file.endsWith('/cgroup.procs') || file.split('/').includes('..')) fail(`${file}: not an absolute cgroup.procs path`, 2);
  try {
    // The kernel moves the writer's own PID (as this process's PID namespace numbers it).
    writeFileSync(file, `${process.pid}\n`);
  } catch (err) {
    fail(`joining ${file}: ${err instanceof Error ? err.message : String(err)}`, 126);
  }
}
const path = resolveProgram(program);
if (!process.execve) fail('this Node has no process.execve (it needs Node 23.11 or later)', 126);
try {
  process.execve(path, [program, ...programArgs], process.env);
} catch (err) {
  fail(`running ${path}: ${err instanceof Error ? err.message : String(err)}`, 126);
}
