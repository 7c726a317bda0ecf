import type { z } from 'zod';

/**
 * What a caller needs for an action.
 * - `none`: no authentication (identify, the auth family).
 * - `authenticated`: any signed-in user.
 * - `read` / `write`: `read` or `read/write` access on the class's subsystem (see `query`).
 * - `full`: a full-access user (root or the admin group).
 * - `wheel`: membership of the admin group, or full access.
 */
export type Access = 'none' | 'authenticated' | 'read' | 'write' | 'full' | 'wheel';

/** Dispatcher queues (spec "Limits": one queue per kind). */
export const QUEUES = ['no_queue', 'pkg_queue', 'jail_queue'] as const;
export type QueueName = (typeof QUEUES)[number];

export interface ActionContract<A extends z.ZodType = z.ZodType, R extends z.ZodType = z.ZodType> {
  /** One line for help texts, docs and the console. */
  readonly description: string;
  /** The action's arguments, without `action` itself. */
  readonly args: A;
  /** The whole `args` of the response envelope, in the spec's exact shape. */
  readonly reply: R;
  readonly access: Access;
  /** The queue the work runs on when the action answers with a pending acknowledgement. */
  readonly queued: QueueName | false;
}

export function action<A extends z.ZodType, R extends z.ZodType>(def: {
  description: string;
  args: A;
  reply: R;
  access: Access;
  queued?: QueueName;
}): ActionContract<A, R> {
  return { ...def, queued: def.queued ?? false };
}

/** Access a limited (non-admin) user gets on a subsystem; full-access users always get `read/write`. */
export type SubsystemAccess = 'read' | 'read/write';

export interface ClassContract<Acts extends Record<string, ActionContract> = Record<string, ActionContract>> {
  readonly namespace: 'admin' | 'rpc';
  /** The wire name (`name` of the envelope), exactly as in the spec. */
  readonly name: string;
  readonly description: string;
  /** What `query` reports to a limited user for this subsystem; `null` hides it from them. */
  readonly limitedAccess: SubsystemAccess | null;
  /** Wire action name to contract, keys spelled exactly as the spec spells them. */
  readonly actions: Acts;
  /** Other spellings accepted for an action (the original's code vs. its docs). */
  readonly actionAliases: Readonly<Record<string, string>>;
}

export function defineClass<const Acts extends Record<string, ActionContract>>(def: {
  namespace: 'admin' | 'rpc';
  name: string;
  description: string;
  limitedAccess: SubsystemAccess | null;
  actions: Acts;
  actionAliases?: Record<string, keyof Acts & string>;
}): ClassContract<Acts> {
  return { ...def, actionAliases: def.actionAliases ?? {} };
}

/** An rpc operation that has no `action` key: the whole `args` is its input (auth, identify, query). */
export interface OperationContract<A extends z.ZodType = z.ZodType, R extends z.ZodType = z.ZodType>
  extends ActionContract<A, R> {
  readonly namespace: 'rpc' | 'events';
  readonly name: string;
}

export function defineOperation<A extends z.ZodType, R extends z.ZodType>(def: {
  namespace: 'rpc' | 'events';
  name: string;
  description: string;
  args: A;
  reply: R;
  access: Access;
}): OperationContract<A, R> {
  return { ...def, queued: false };
}

export type ArgsOf<C extends ActionContract> = z.input<C['args']>;
export type ParsedArgsOf<C extends ActionContract> = z.output<C['args']>;
export type ReplyOf<C extends ActionContract> = z.input<C['reply']>;
