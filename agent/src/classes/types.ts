/**
 * How a class is implemented: a handler per action, typed from the class's contract, built once
 * per agent from its services (and so from its platform). A class that the platform cannot serve
 * returns null from `create`, and the pipeline answers 404 for it and `query` leaves it out.
 */
import type { adminClasses, rpcClasses } from '@hostadm/shared/api/index.ts';
import type { AckForm, ActionContract, ClassContract, ParsedArgsOf, ReplyOf } from '@hostadm/shared/protocol/define.ts';
import type { AgentServices, AuthedContext } from '../server/context.ts';
import type { JobPlan } from '../jobs/queued-actions.ts';

// Declared as methods so a table of specific handlers is assignable to the general one (the pipeline
// parses each request with its action's schema before calling, so the argument is always right).
type Bivariant<F extends (...args: never[]) => unknown> = { call(...args: Parameters<F>): ReturnType<F> }['call'];

/** An action answered by its handler. */
export type ActionHandler<A extends ActionContract> = Bivariant<(args: ParsedArgsOf<A>, ctx: AuthedContext) => Promise<ReplyOf<A>>>;

/**
 * A queued action whose contract declares `ack`: the handler checks what needs the host's state and
 * plans the work; the pipeline submits it, answers with the acknowledgement and publishes the events.
 */
export type QueuedHandler<A extends ActionContract> = Bivariant<(args: ParsedArgsOf<A>, ctx: AuthedContext) => Promise<JobPlan>>;

export type HandlerOf<A extends ActionContract> = A['ack'] extends AckForm ? QueuedHandler<A> : ActionHandler<A>;

export type ClassHandlers<C extends ClassContract> = {
  [K in keyof C['actions']]: HandlerOf<C['actions'][K]>;
};

export interface ClassImplementation<C extends ClassContract = ClassContract> {
  readonly contract: C;
  create(services: AgentServices): ClassHandlers<C> | null;
}

export function implementClass<C extends ClassContract>(contract: C, create: (services: AgentServices) => ClassHandlers<C> | null): ClassImplementation<C> {
  return { contract, create };
}

type Contracts = { readonly [K in keyof typeof adminClasses as `admin/${K}`]: (typeof adminClasses)[K] } & {
  readonly [K in keyof typeof rpcClasses as `rpc/${K}`]: (typeof rpcClasses)[K];
};

/** Every class of the contracts, by the name `query` reports (`admin/users`, `rpc/dispatcher`). */
export type ClassKey = keyof Contracts;

/**
 * The agent's classes: one entry per contract, keyed by `<namespace>/<class>`, so a class left out
 * or misspelled (or an implementation under another class's name) does not compile. `null` marks a
 * class no platform serves yet: 404 "… is not available on this host", and `query` omits it.
 */
export type ClassRegistry = { readonly [K in ClassKey]: ClassImplementation<Contracts[K]> | null };

/** What the pipeline serves: the registry, or in tests the registry plus demonstration classes. */
export type ServedClasses = Readonly<Record<string, ClassImplementation | null>>;

/** A handler table as the pipeline sees it, after the types have done their work. */
export type AnyHandlers = Readonly<Record<string, (args: unknown, ctx: AuthedContext) => Promise<unknown>>>;
