/**
 * The typed surface: `client.admin.<class>.<action>(args)` and `client.rpc.<class>.<action>(args)`,
 * one method per action of the contracts. Argument types are the contract's `z.input` (what may be
 * sent), reply types its reply's `z.input` (the wire form, exactly what the host sends). Actions whose
 * contract names a queue (pkg's, `fetchiso`, `startupdate`, `dispatcher run`) resolve to a `QueuedJob`
 * instead of the bare acknowledgement.
 */
import type { z } from 'zod';
import type { ActionContract, ClassContract, QueueName } from '@hostadm/shared/protocol/define.ts';
import type { adminClasses, rpcClasses } from '@hostadm/shared/api/index.ts';
import type { CallOptions, QueuedJob } from './types.ts';

export type ArgsOf<C extends ActionContract> = z.input<C['args']>;
export type ReplyOf<C extends ActionContract> = z.input<C['reply']>;

/**
 * Whether an action is queued, read from its contract's literal `queued` (the queue's name, or
 * `false`): a queued action resolves to a job handle, any other to its reply.
 */
export type IsQueued<C extends ActionContract> = C['queued'] extends QueueName ? true : false;

/** The result of calling an action: the reply, or a job handle for queued actions. */
export type ResultOf<C extends ActionContract> = IsQueued<C> extends true ? QueuedJob<ReplyOf<C>> : ReplyOf<C>;

/** Arguments are optional when the action takes none (or all are optional). */
// biome-ignore lint/complexity/noBannedTypes: `{} extends X` asks whether every field of X is optional
type Params<C extends ActionContract> = {} extends ArgsOf<C> ? [args?: ArgsOf<C>, options?: CallOptions] : [args: ArgsOf<C>, options?: CallOptions];

export type ActionMethod<C extends ActionContract> = (...params: Params<C>) => Promise<ResultOf<C>>;

export type ClassClient<K extends ClassContract> = {
  readonly [A in keyof K['actions'] & string]: ActionMethod<K['actions'][A]>;
};

export type AdminClient = { readonly [K in keyof typeof adminClasses]: ClassClient<(typeof adminClasses)[K]> };
export type RpcClient = { readonly [K in keyof typeof rpcClasses]: ClassClient<(typeof rpcClasses)[K]> };

export type Invoke = (namespace: 'admin' | 'rpc', className: string, action: string, args: unknown, options?: CallOptions) => Promise<unknown>;

/** The run-time side: a Proxy that turns `ns.class.action(args)` into `invoke(...)`. */
export function namespaceProxy<T>(namespace: 'admin' | 'rpc', invoke: Invoke): T {
  const classes = new Map<string, object>();
  const classProxy = (className: string) => {
    const methods = new Map<string, (args?: unknown, options?: CallOptions) => Promise<unknown>>();
    return new Proxy(
      {},
      {
        get(_target, action) {
          // Not thenable, not iterable: `await client.admin.users` must not call anything.
          if (typeof action !== 'string' || action === 'then') return undefined;
          let method = methods.get(action);
          if (!method) {
            method = (args?: unknown, options?: CallOptions) => invoke(namespace, className, action, args ?? {}, options);
            methods.set(action, method);
          }
          return method;
        },
      },
    );
  };
  return new Proxy(
    {},
    {
      get(_target, className) {
        if (typeof className !== 'string' || className === 'then') return undefined;
        let proxy = classes.get(className);
        if (!proxy) {
          proxy = classProxy(className);
          classes.set(className, proxy);
        }
        return proxy;
      },
    },
  ) as T;
}
