/**
 * Help texts generated from the contracts: every class, action and argument with the contract's own
 * descriptions, required/optional, and the form to write it in (key=value for strings, key:=json for
 * anything else).
 */
import type { z } from 'zod';
import type { ActionContract, ClassContract, OperationContract } from '@hostadm/shared/protocol/define.ts';
import type { HelpScope } from './help-scope.ts';

interface Def {
  type: string;
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  in?: z.ZodType;
  out?: z.ZodType;
  options?: z.ZodType[];
  element?: z.ZodType;
  entries?: Record<string, string | number>;
  values?: unknown[];
  keyType?: z.ZodType;
  valueType?: z.ZodType;
}

const defOf = (s: z.ZodType): Def => (s as unknown as { _zod: { def: Def } })._zod.def;

/** The first description found from the outside in (wrappers often carry none). */
export function descriptionOf(schema: z.ZodType): string {
  for (let s: z.ZodType | undefined = schema; s; ) {
    if (s.description) return s.description;
    const d = defOf(s);
    s = d.innerType ?? d.in;
  }
  return '';
}

function isOptional(schema: z.ZodType): boolean {
  return (schema as unknown as { _zod: { optin?: string } })._zod.optin === 'optional';
}

/** Input types a schema accepts, as short words. */
export function typeWords(schema: z.ZodType): string[] {
  const d = defOf(schema);
  switch (d.type) {
    case 'string':
      return ['string'];
    case 'number':
    case 'int':
    case 'bigint':
      return ['number'];
    case 'boolean':
      return ['true|false'];
    case 'enum':
      return [Object.values(d.entries ?? {}).join('|')];
    case 'literal':
      return [(d.values ?? []).map((v) => String(v)).join('|')];
    case 'array':
      return [`[${d.element ? typeWords(d.element).join(' or ') : 'any'}]`];
    case 'tuple':
      return ['[...]'];
    case 'record':
      return ['{...}'];
    case 'object':
      return ['{...}'];
    case 'union': {
      const words = (d.options ?? []).flatMap(typeWords);
      return [...new Set(words)];
    }
    case 'optional':
    case 'nullable':
    case 'default':
    case 'prefault':
    case 'readonly':
    case 'catch':
    case 'nonoptional':
      return d.innerType ? typeWords(d.innerType) : ['any'];
    case 'pipe':
      return d.in ? typeWords(d.in) : ['any'];
    default:
      return ['any'];
  }
}

/** How to write a field on the command line: `key=STRING` when strings are accepted, else `key:=JSON`. */
function fieldForm(name: string, schema: z.ZodType): string {
  const words = typeWords(schema);
  const takesString = words.some((w) => w === 'string' || (/^[^[{]/.test(w) && w !== 'number' && w !== 'true|false' && w !== 'any'));
  const summary = words.join(' or ');
  return takesString ? `${name}=${summary === 'string' ? 'STRING' : summary}` : `${name}:=${summary}`;
}

export interface ArgDoc {
  form: string;
  required: boolean;
  description: string;
}

/** The arguments of an action, one line each. */
export function argDocs(schema: z.ZodType): ArgDoc[] {
  let s = schema;
  for (let d = defOf(s); d.type === 'pipe' || d.type === 'optional' || d.type === 'default'; d = defOf(s)) s = (d.in ?? d.innerType)!;
  const d = defOf(s);
  if (d.type === 'object' && d.shape) {
    return Object.entries(d.shape).map(([name, field]) => ({
      form: fieldForm(name, field),
      required: !isOptional(field),
      description: descriptionOf(field),
    }));
  }
  if (d.type === 'record' && d.keyType && d.valueType) {
    const key = (descriptionOf(d.keyType) || 'key').toUpperCase().replace(/\s+/g, '_');
    return [
      {
        form: fieldForm(key, d.valueType),
        required: true,
        description: `${descriptionOf(schema) || descriptionOf(d.valueType) || 'key to value'}; one or more`,
      },
    ];
  }
  return [];
}

const ACCESS_WORDS: Record<string, string> = {
  none: 'no sign-in',
  authenticated: 'any signed-in user',
  read: 'read',
  write: 'read/write',
  full: 'full access',
  wheel: 'admin group',
};

function wrap(text: string, width: number, indent: string): string {
  const words = text.split(/\s+/).filter(Boolean);
  const lines: string[] = [];
  let line = '';
  for (const w of words) {
    if (line && line.length + 1 + w.length > width) {
      lines.push(line);
      line = w;
    } else line = line ? `${line} ${w}` : w;
  }
  if (line) lines.push(line);
  return lines.map((l, i) => (i === 0 ? l : indent + l)).join('\n');
}

export function actionHelp(name: string, contract: ActionContract, aliases: string[] = []): string {
  const out: string[] = [];
  const tags = [ACCESS_WORDS[contract.access] ?? contract.access];
  if (contract.queued !== false) tags.push(`queued on ${contract.queued}: waits for the job, or --no-wait`);
  out.push(`  ${name}  [${tags.join('; ')}]${aliases.length ? `  (also: ${aliases.join(', ')})` : ''}`);
  out.push(`      ${wrap(contract.description, 90, '      ')}`);
  const args = argDocs(contract.args);
  if (args.length === 0) out.push('      (no arguments)');
  const width = Math.min(34, Math.max(...args.map((a) => a.form.length), 0) + 2);
  for (const a of args) {
    const form = a.form.length + 2 > width ? `${a.form}\n${' '.repeat(6 + width)}` : a.form.padEnd(width);
    out.push(`      ${form}${a.required ? 'required' : 'optional'}  ${wrap(a.description, 70, ' '.repeat(6 + width + 10))}`);
  }
  return out.join('\n');
}

export const ARG_SYNTAX = `Arguments:
  key=value        a string                  name=bob  comment='Bob Smith'
  key:=json        a JSON value              pid:=42  clean_home:=false  users:='["a","b"]'
  key=a key=b      a repeated key is an array  services=sshd services=cron
  --json '{...}'   a JSON object of arguments; key=value pairs apply on top`;

export function classHelp(namespace: string, contract: ClassContract, only?: string): string {
  const out: string[] = [];
  const target = namespace === 'admin' ? contract.name : `${namespace}/${contract.name}`;
  out.push(`Usage: hostadm call ${target} ${only ?? '<action>'} [key=value ...] [key:=json ...] [--json '{...}'] [options]`);
  out.push('');
  out.push(`${namespace}/${contract.name}: ${contract.description}`);
  out.push(`Limited users: ${contract.limitedAccess ?? 'no access'}; access needed per action in [brackets].`);
  out.push('');
  out.push(only ? 'Action:' : 'Actions:');
  const aliasesOf = (action: string) =>
    Object.entries(contract.actionAliases)
      .filter(([, a]) => a === action)
      .map(([alias]) => alias);
  const names = only ? [only] : Object.keys(contract.actions).sort();
  for (const name of names) {
    out.push('');
    out.push(actionHelp(name, contract.actions[name]!, aliasesOf(name)));
  }
  out.push('');
  out.push(ARG_SYNTAX);
  return `${out.join('\n')}\n`;
}

export function operationHelp(op: OperationContract): string {
  return [
    `Usage: hostadm call ${op.namespace}/${op.name} [key=value ...] [options]`,
    '',
    `${op.namespace}/${op.name}: ${op.description} [${ACCESS_WORDS[op.access] ?? op.access}]`,
    '',
  ].join('\n');
}

export function overviewHelp(allAdmin: ClassContract[], allRpc: ClassContract[], ops: OperationContract[], scope: HelpScope): string {
  const out: string[] = [];
  const served = (namespace: string) => (c: ClassContract) => scope.kind === 'all' || Object.hasOwn(scope.served, `${namespace}/${c.name}`);
  const admin = allAdmin.filter(served('admin'));
  const rpc = allRpc.filter(served('rpc'));
  const access = (namespace: string, c: ClassContract) => (scope.kind === 'served' ? `  [${scope.served[`${namespace}/${c.name}`]}]` : '');
  out.push("Usage: hostadm call <class> <action> [key=value ...] [key:=json ...] [--json '{...}'] [options]");
  out.push('       hostadm call <class> --help            actions and arguments of a class');
  out.push('');
  out.push('Calls any action. Arguments are checked against the contract before anything is sent; the reply');
  out.push("is printed as JSON. Queued actions show progress on stderr and print the job's result.");
  out.push('');
  const width = Math.max(...[...admin, ...rpc].map((c) => c.name.length + 4), ...ops.map((o) => o.name.length + 4)) + 2;
  out.push(
    scope.kind === 'served'
      ? `Classes that ${scope.where} serves (rpc/query), with your access in [brackets]; others: hostadm call <class> --help.`
      : `All classes in the contracts: ${scope.why}.`,
  );
  out.push('');
  out.push('Classes (namespace admin, the default):');
  for (const c of admin) out.push(`  ${c.name.padEnd(width)}${c.description}${access('admin', c)}`);
  out.push('');
  out.push('Namespace rpc (write rpc/<name>, or the name alone where no admin class has it):');
  for (const c of rpc) out.push(`  ${`rpc/${c.name}`.padEnd(width)}${c.description}${access('rpc', c)}`);
  for (const o of ops) out.push(`  ${`rpc/${o.name}`.padEnd(width)}${o.description} (no action)`);
  out.push('');
  out.push(ARG_SYNTAX);
  out.push('');
  out.push(`Options:
  --json <object>        arguments as one JSON object
  --no-wait              queued actions: print the job id(s) and return at once
  --progress <mode>      queued actions: bar, log or none (default: bar on a terminal, log otherwise)
  --profile, --url, --user, --key, --timeout   where and how to connect (see hostadm --help)

Examples:
  hostadm call users usershow
  hostadm call systemmanager killproc pid:=4242 signal=TERM
  hostadm call services start services=sshd
  hostadm call dispatcher run backup='tar -cf /tmp/etc.tar /etc'
  hostadm call rpc/identify`);
  return `${out.join('\n')}\n`;
}
