/**
 * How a class is implemented: a handler per action, typed from the class's contract, built once
 * per agent from its services (and so from its platform). A class that the platform cannot serve
 * returns null from `create`, and the pipeline answers 404 for it.
 */
import type { ActionContract, ClassContract, ParsedArgsOf, ReplyOf } from '@hostadm/shared/protocol/define.ts';
import type { AgentServices, AuthedContext } from '../server/context.ts';

export type ActionHandler<A extends ActionContract> = (args: ParsedArgsOf<A>, ctx: AuthedContext) => Promise<ReplyOf<A>>;

export type ClassHandlers<C extends ClassContract> = {
  [K in keyof C['actions']]: ActionHandler<C['actions'][K]>;
};

export interface ClassImplementation<C extends ClassContract = ClassContract> {
  readonly contract: C;
  create(services: AgentServices): ClassHandlers<C> | null;
}

export function implementClass<C extends ClassContract>(
  contract: C,
  create: (services: AgentServices) => ClassHandlers<C> | null,
): ClassImplementation<C> {
  return { contract, create };
}

/** A handler table as the pipeline sees it, after the types have done their work. */
export type AnyHandlers = Record<string, (args: unknown, ctx: AuthedContext) => Promise<unknown>>;
