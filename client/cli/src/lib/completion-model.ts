/**
 * What shell completion and docs/cli.md are generated from: the commander program (commands,
 * subcommands, options and whether each takes a value) and the contracts (`hostadm call` targets,
 * their actions and argument names), read once into plain data.
 */
import type { Command, Option } from 'commander';
import type { ActionContract, ClassContract } from '@hostadm/shared/protocol/define.ts';
import { loadClasses, loadOperation, rpcOperationNames } from '../../../sdk/src/contracts.ts';
import { argDocs } from './help.ts';

export interface OptionInfo {
  /** `-h`, `--help`: every spelling. */
  names: string[];
  /** `--url <url>`: the flags as written, for docs. */
  flags: string;
  takesValue: boolean;
  description: string;
  defaultValue?: string;
}

export interface CommandInfo {
  /** `['bridge', 'keys', 'list']`; the program itself is `[]`. */
  path: string[];
  usage: string;
  description: string;
  options: OptionInfo[];
  /** The values the first argument takes, where the command lists them (`completion <shell>`). */
  choices: string[];
  subcommands: CommandInfo[];
}

export interface ArgInfo {
  /** What completion inserts: `pid:=` (JSON value) or `name=` (string). */
  prefix: string | null;
  form: string;
  required: boolean;
  description: string;
}

export interface ActionInfo {
  name: string;
  description: string;
  access: string;
  queued: string | false;
  aliases: string[];
  args: ArgInfo[];
}

/** A first word of `hostadm call`: an admin class, `rpc/<class>`, or an rpc operation (`rpc/query`). */
export interface CallTarget {
  name: string;
  description: string;
  /** Empty for an operation, which takes arguments directly. */
  actions: ActionInfo[];
  /** An operation's own arguments. */
  args: ArgInfo[];
}

export interface CompletionModel {
  program: CommandInfo;
  targets: CallTarget[];
}

function optionInfo(option: Option): OptionInfo {
  const names = [option.short, option.long].filter((n): n is string => typeof n === 'string');
  const defaultValue =
    option.defaultValue === undefined || option.negate || typeof option.defaultValue === 'boolean' ? undefined : printable(option.defaultValue);
  return {
    names,
    flags: option.flags,
    takesValue: option.required || option.optional,
    description: option.description,
    ...(defaultValue === undefined ? {} : { defaultValue }),
  };
}

/** Defaults as a user would type them (`--listen`'s parsed `{host, port}` back to `HOST:PORT`). */
function printable(value: unknown): string {
  if (typeof value === 'object' && value !== null && 'host' in value && 'port' in value) return `${String(value.host)}:${String(value.port)}`;
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function commandInfo(command: Command, path: string[]): CommandInfo {
  const options = command.options.filter((o) => !o.hidden).map(optionInfo);
  if (!options.some((o) => o.names.includes('--help')))
    options.push({ names: ['-h', '--help'], flags: '-h, --help', takesValue: false, description: 'display help for command' });
  // Hidden commands (`session serve`, which hostadm starts itself) are neither completed nor documented.
  const visible = new Set(command.createHelp().visibleCommands(command));
  const subcommands = command.commands.filter((c) => visible.has(c)).map((c) => commandInfo(c, [...path, c.name()]));
  const choices = command.registeredArguments[0]?.argChoices ?? [];
  return { path, usage: command.usage(), description: command.description(), options, choices: [...choices], subcommands };
}

function argInfos(schema: ActionContract['args']): ArgInfo[] {
  return argDocs(schema).map((doc) => {
    // A record's key is a placeholder (KEY=...), not a name to complete.
    const named = /^([a-z_][a-z0-9_.-]*)(:?=)/.exec(doc.form);
    return { prefix: named ? `${named[1]}${named[2]}` : null, form: doc.form, required: doc.required, description: doc.description };
  });
}

function actionInfos(contract: ClassContract): ActionInfo[] {
  const aliasesOf = (name: string) =>
    Object.entries(contract.actionAliases)
      .filter(([, target]) => target === name)
      .map(([alias]) => alias);
  return Object.entries(contract.actions)
    .map(([name, action]) => ({
      name,
      description: action.description,
      access: action.access,
      queued: action.queued,
      aliases: aliasesOf(name),
      args: argInfos(action.args),
    }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

export async function completionModel(program: Command): Promise<CompletionModel> {
  const [admin, rpc] = await Promise.all([loadClasses('admin'), loadClasses('rpc')]);
  // Sign-in operations are the SDK's business; `hostadm call` offers identify and query.
  const operations = await Promise.all(
    rpcOperationNames()
      .filter((n) => !n.startsWith('auth'))
      .map(async (n) => (await loadOperation('rpc', n))!),
  );
  const targets: CallTarget[] = [
    ...admin.map((c) => ({ name: c.name, description: c.description, actions: actionInfos(c), args: [] })),
    ...rpc.map((c) => ({ name: `rpc/${c.name}`, description: c.description, actions: actionInfos(c), args: [] })),
    ...operations.map((op) => ({ name: `rpc/${op.name}`, description: op.description, actions: [], args: argInfos(op.args) })),
  ];
  return { program: commandInfo(program, []), targets };
}

/** Every command of the tree, depth first, the program first. */
export function allCommands(info: CommandInfo): CommandInfo[] {
  return [info, ...info.subcommands.flatMap(allCommands)];
}

/** One line: completion menus and tables have no room for paragraphs. */
export function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}
