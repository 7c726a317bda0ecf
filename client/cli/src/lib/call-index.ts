/**
 * The call index: what `hostadm call` must know of a class action to send it without loading its
 * contract: the class's actions and aliases, which of them are queued, and which take no arguments
 * (their schema accepts `{}`). A call of such an action with no arguments then loads neither zod nor
 * the class's contract nor the argument checks: ~15 ms of a cold bridged call's CPU
 * (client/cli/README.md, "Start-up").
 *
 * Never written by hand: a bundle carries the index computed from the real contracts when it was made
 * (scripts/bundle-cli.ts replaces call-index-built.ts with `callIndexOf` over the registry); run from
 * the TypeScript sources, a class's entry is computed from its contract when asked, by the same
 * `classEntryOf`, so both layouts decide alike.
 */
import type { ClassContract } from '@hostadm/shared/protocol/define.ts';
import { isQueued, loadClass, type ClassNamespace } from '../../../sdk/src/contracts.ts';
import { builtCallIndex } from './call-index-built.ts';

export interface ActionEntry {
  /** Answers with a pending acknowledgement and runs as a job (the contract's `queued`). */
  readonly queued: boolean;
  /** Its arguments schema accepts `{}`: a call without arguments needs no check. */
  readonly acceptsEmpty: boolean;
}

export interface ClassEntry {
  /** By canonical action name. */
  readonly actions: Readonly<Record<string, ActionEntry>>;
  /** Other spelling → canonical name, as the contract's `actionAliases`. */
  readonly aliases: Readonly<Record<string, string>>;
}

export type CallIndex = Readonly<Record<ClassNamespace, Readonly<Record<string, ClassEntry>>>>;

/** One class's entry, read from its contract (this evaluates every action's args schema on `{}`). */
export function classEntryOf(contract: ClassContract): ClassEntry {
  const actions: Record<string, ActionEntry> = {};
  for (const [name, action] of Object.entries(contract.actions)) {
    actions[name] = { queued: isQueued(action), acceptsEmpty: action.args.safeParse({}).success };
  }
  return { actions, aliases: { ...contract.actionAliases } };
}

/** The whole index, from the registry's class tables (`adminClasses`, `rpcClasses` of shared/src/api/index.ts). */
export function callIndexOf(classes: Readonly<Record<ClassNamespace, Readonly<Record<string, ClassContract>>>>): CallIndex {
  const entries = (table: Readonly<Record<string, ClassContract>>) => Object.fromEntries(Object.entries(table).map(([name, c]) => [name, classEntryOf(c)]));
  return { admin: entries(classes.admin), rpc: entries(classes.rpc) };
}

/** The class's entry (undefined for a class the contracts do not have): the bundle's built index, or from the contract. */
export async function classEntry(namespace: ClassNamespace, name: string): Promise<ClassEntry | undefined> {
  const built = builtCallIndex();
  if (built !== null) return Object.hasOwn(built[namespace], name) ? built[namespace][name] : undefined;
  const contract = await loadClass(namespace, name);
  return contract && classEntryOf(contract);
}

/** `action`'s canonical name as contracts.ts's resolveAction finds it (the action itself, else an alias of one). */
export function canonicalAction(entry: ClassEntry, action: string): string | undefined {
  if (Object.hasOwn(entry.actions, action)) return action;
  const alias = Object.hasOwn(entry.aliases, action) ? entry.aliases[action] : undefined;
  return alias !== undefined && Object.hasOwn(entry.actions, alias) ? alias : undefined;
}

/**
 * The canonical name of `action` when calling it with no arguments needs nothing from its contract:
 * it exists, it is not queued (a queued call follows its jobs, as before), and `{}` passes its
 * arguments schema. Undefined otherwise: the call loads the contract, for its help, its "did you
 * mean" or its refusal, exactly as a call with arguments does.
 */
export function argumentFreeAction(entry: ClassEntry | undefined, action: string): string | undefined {
  if (entry === undefined) return undefined;
  const canonical = canonicalAction(entry, action);
  const found = canonical === undefined ? undefined : entry.actions[canonical];
  return found !== undefined && !found.queued && found.acceptsEmpty ? canonical : undefined;
}
