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

/**
 * How the agent acknowledges a queued action it submits itself (spec "Dispatcher events"):
 * - `proc_id`: pkg's `{proc_cmd, proc_id: "admin_<action>-{<uuid>}", status: "pending"}`;
 * - `queueid`: vm `fetchiso` / update `startupdate`'s `{command, comment: "Task Queued", queueid}`.
 */
export type AckForm = 'proc_id' | 'queueid';

export interface ActionContract<
  A extends z.ZodType = z.ZodType,
  R extends z.ZodType = z.ZodType,
  Q extends QueueName | false = QueueName | false,
  K extends AckForm | null = AckForm | null,
> {
  /** One line for help texts, docs and the console. */
  readonly description: string;
  /** The action's arguments, without `action` itself. */
  readonly args: A;
  /** The whole `args` of the response envelope, in the spec's exact shape. */
  readonly reply: R;
  readonly access: Access;
  /** The queue the work runs on when the action answers with a pending acknowledgement (kept literal). */
  readonly queued: Q;
  /**
   * Set when the agent's pipeline submits the job and answers for the handler, which only plans the
   * work; null when the action is not queued or its handler answers itself (`dispatcher run`).
   */
  readonly ack: K;
}

/**
 * A value built the first time it is asked for, then kept. The contracts build their zod schemas with
 * it (and `action` / `defineOperation` their `args` and `reply`): zod 4 classic attaches its methods to
 * every schema it makes, so a class's contract built whole at import costs a short program (one
 * `hostadm call` with arguments) every schema of the class although it checks one.
 */
export function lazy<T>(build: () => T): () => T {
  let built: { readonly value: T } | undefined;
  return () => (built ??= { value: build() }).value;
}

/** A schema, or a function that builds it (built when the contract's `args` / `reply` is first read). */
export type SchemaSource<S extends z.ZodType> = S | (() => S);

function sourceOf<S extends z.ZodType>(source: SchemaSource<S>): () => S {
  if (typeof source === 'function') return lazy(source);
  return () => source;
}

interface ActionDef<A extends z.ZodType, R extends z.ZodType> {
  description: string;
  args: SchemaSource<A>;
  reply: SchemaSource<R>;
  access: Access;
}

/**
 * Declares an action. The queue and the acknowledgement form stay literal in the type, so the SDK
 * knows a queued action from its contract and the agent types its handler (answer, or plan a job).
 */
export function action<A extends z.ZodType, R extends z.ZodType>(def: ActionDef<A, R>): ActionContract<A, R, false, null>;
/** A queued action whose handler submits its jobs and answers itself (`dispatcher run`). */
export function action<A extends z.ZodType, R extends z.ZodType, const Q extends QueueName>(
  def: ActionDef<A, R> & { queued: Q },
): ActionContract<A, R, Q, null>;
/** A queued action the pipeline submits: the handler plans the job, the reply is the `ack` form. */
export function action<A extends z.ZodType, R extends z.ZodType, const Q extends QueueName, const K extends AckForm>(
  def: ActionDef<A, R> & { queued: Q; ack: K },
): ActionContract<A, R, Q, K>;
export function action(def: ActionDef<z.ZodType, z.ZodType> & { queued?: QueueName; ack?: AckForm }): ActionContract {
  return withSchemas({ description: def.description, access: def.access, queued: def.queued ?? false, ack: def.ack ?? null }, def);
}

/** `fields` with `args` and `reply` as getters that build each schema the first time it is read. */
function withSchemas<T extends object>(
  fields: T,
  schemas: { args: SchemaSource<z.ZodType>; reply: SchemaSource<z.ZodType> },
): T & { readonly args: z.ZodType; readonly reply: z.ZodType } {
  const args = sourceOf(schemas.args);
  const reply = sourceOf(schemas.reply);
  return Object.defineProperties(fields, { args: { get: args, enumerable: true }, reply: { get: reply, enumerable: true } }) as T & {
    readonly args: z.ZodType;
    readonly reply: z.ZodType;
  };
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
export interface OperationContract<A extends z.ZodType = z.ZodType, R extends z.ZodType = z.ZodType> extends ActionContract<A, R, false, null> {
  readonly namespace: 'rpc' | 'events';
  readonly name: string;
}

export function defineOperation<A extends z.ZodType, R extends z.ZodType>(def: {
  namespace: 'rpc' | 'events';
  name: string;
  description: string;
  args: SchemaSource<A>;
  reply: SchemaSource<R>;
  access: Access;
}): OperationContract<A, R> {
  const { namespace, name, description, access } = def;
  return withSchemas({ namespace, name, description, access, queued: false as const, ack: null }, def) as OperationContract<A, R>;
}

export type ArgsOf<C extends ActionContract> = z.input<C['args']>;
export type ParsedArgsOf<C extends ActionContract> = z.output<C['args']>;
export type ReplyOf<C extends ActionContract> = z.input<C['reply']>;
