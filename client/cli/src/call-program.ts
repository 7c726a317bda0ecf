/**
 * The root `hostadm` command, and `hostadm call` alone: the program with only the call command
 * defined (program.ts uses it for `call`). It is also bundled by itself into one CommonJS file
 * (scripts/bundle-cli.ts: `cli/src/call.cjs` in the npm package, `client/cli/.call-bundle/` in a
 * checkout while fresh) that main runs without Node's ES module loader (lib/call-bundle.cts).
 */
import { Command } from 'commander';
import { configureProgram, registerCallCommand } from './client-commands.ts';

export function newProgram(): Command {
  return new Command().name('hostadm').description('Administer hosts remotely: run an agent, relay through a bridge, call any action').showHelpAfterError();
}

export async function runCallProgram(argv: readonly string[]): Promise<void> {
  const program = newProgram();
  configureProgram(program);
  registerCallCommand(program);
  await program.parseAsync([...argv]);
}
