/**
 * `hostadm call <class> <action> [key=value ...] [key:=json ...] [--json '{...}']`: any action,
 * arguments checked against the contract before sending, reply printed as JSON. Queued actions show
 * progress on stderr and print `{ack, jobs: {<id>: <completion event>}}`; `--no-wait` prints the job ids.
 *
 * A call without arguments of an action that takes none is sent from the call index (lib/call-index.ts)
 * alone: no zod, no class contract, no argument checks are loaded for it. Everything else (help, usage
 * errors, arguments to check, queued actions) loads the contract, and the checks, as it needs them.
 */
import type { ConnectionOptions } from '../client-commands.ts';
import {
  classNames,
  isClass,
  isOperation,
  isQueued,
  loadClass,
  loadClasses,
  loadOperation,
  resolveAction,
  rpcOperationNames,
} from '../../../sdk/src/contracts.ts';
import { HostadmRequestError } from '../../../sdk/src/errors.ts';
import type { QueuedJob } from '../../../sdk/src/types.ts';
import type { ActionContract, ClassContract } from '@hostadm/shared/protocol/define.ts';
import { parseActionArgs } from '../lib/args.ts';
import { argumentFreeAction, classEntry } from '../lib/call-index.ts';
import { EXIT, runCommand, usageError } from '../lib/exit.ts';
import { classHelp, operationHelp, overviewHelp } from '../lib/help.ts';
import { helpScope } from '../lib/help-scope.ts';
import { didYouMean } from '../lib/suggest.ts';
import { printJson } from '../lib/output.ts';
import { followJobs, progressMode, succeeded } from '../lib/progress.ts';
import { openClient, type OpenClient, type OpenOptions } from '../lib/session.ts';

export interface CallOptions extends ConnectionOptions {
  json?: string;
  wait: boolean;
  progress?: string;
  help?: boolean;
}

/**
 * Where a call's output goes and how it reaches the host: this process's stdout/stderr and its own
 * connection, or (lib/control-session.ts) a persisted session's connection with the output sent back to
 * the `hostadm call` that asked, so both paths print through this one file.
 */
export interface CallVia {
  out(text: string): void;
  err(text: string): void;
  open(opts: CallOptions, options?: OpenOptions): Promise<OpenClient>;
  /** Set by a persisted session: a queued action follows progress on the caller's own terminal. */
  oneShotOnly?: boolean;
}

/** Raised before anything is sent when a persisted session cannot serve a call as its own process would. */
export class NeedsOwnProcess extends Error {}

const ownProcess: CallVia = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  async open(opts, options) {
    const session = await openClient(opts, options);
    if (session.target.bridge && process.env.HOSTADM_PERSIST !== undefined) {
      const { startControlSession } = await import('../lib/control-session.ts');
      startControlSession(session.target);
    }
    return session;
  },
};

interface Parsed {
  namespace: 'admin' | 'rpc';
  name: string;
}

/**
 * `users` and `admin/users` are admin classes; `rpc/dispatcher` an rpc one. A bare name that is not an
 * admin class but exists in rpc alone (`dispatcher`, `identify`, `query`) means that one.
 */
function parseTarget(target: string): Parsed {
  const slash = target.indexOf('/');
  if (slash < 0) {
    if (!isClass('admin', target) && (isClass('rpc', target) || isOperation('rpc', target))) return { namespace: 'rpc', name: target };
    return { namespace: 'admin', name: target };
  }
  const ns = target.slice(0, slash);
  const name = target.slice(slash + 1);
  if (ns !== 'admin' && ns !== 'rpc')
    throw usageError(`unknown namespace ${ns} in ${target}${didYouMean(ns, ['admin', 'rpc'])}: use admin/<class> or rpc/<name> (events: hostadm events)`);
  return { namespace: ns, name };
}

const callableRpcOperations = () => rpcOperationNames().filter((n) => !n.startsWith('auth'));

function unknownClass(target: string): Error {
  const name = target.slice(target.indexOf('/') + 1);
  const admin = classNames('admin').sort();
  const rpc = [...classNames('rpc'), ...callableRpcOperations()];
  // Suggestions as they can be written: bare names work for every class but rpc/settings (admin/settings wins).
  const near = didYouMean(name, [...admin, ...rpc.filter((n) => !admin.includes(n))]);
  return usageError(
    `unknown class ${target}${near}`,
    `classes: ${admin.join(', ')}\nrpc: ${rpc.map((n) => `rpc/${n}`).join(', ')}\nhostadm call --help lists them with descriptions`,
  );
}

function unknownAction(cls: string, contract: ClassContract, action: string): Error {
  const names = Object.keys(contract.actions).sort();
  return usageError(
    `${cls} has no action ${action}${didYouMean(action, [...names, ...Object.keys(contract.actionAliases)])}`,
    `actions: ${names.join(', ')}\nhostadm call ${cls} --help describes them`,
  );
}

/**
 * Arguments checked here too (the SDK would refuse the same way) so a usage error never opens a
 * connection. The checks load here, for calls that have arguments to check.
 */
async function checkArgs(schema: ActionContract['args'], args: unknown, target: { namespace: string; name: string; action?: string }): Promise<void> {
  const { check, summarize } = await import('../../../sdk/src/validate.ts');
  const problems = check(schema, args);
  if (problems.length === 0) return;
  const label = `${target.namespace}/${target.name}${target.action === undefined ? '' : ` ${target.action}`}`;
  throw new HostadmRequestError(400, `invalid arguments for ${label}: ${summarize(problems)}`, target, { fieldErrors: problems, local: true });
}

/** Sends a call that is not queued, its action canonical and its arguments checked, and prints the reply. */
async function callAndPrint(via: CallVia, opts: CallOptions, ns: 'admin' | 'rpc', cls: string, action: string, args: Record<string, unknown>): Promise<number> {
  const session = await via.open(opts, { first: (client) => client.callChecked(ns, cls, action, args) });
  try {
    printJson(await (session.first ?? session.client.callChecked(ns, cls, action, args)), via.out);
  } finally {
    await session.close();
  }
  return EXIT.ok;
}

export async function runCall(cls: string | undefined, action: string | undefined, rest: string[], opts: CallOptions): Promise<void> {
  await runCommand(() => callThrough(ownProcess, cls, action, rest, opts), { exitWhenWritten: true });
}

/** The call itself; returns the exit code, throws what reportError turns into a message. */
export async function callThrough(via: CallVia, cls: string | undefined, action: string | undefined, rest: string[], opts: CallOptions): Promise<number> {
  {
    if (!cls) {
      if (opts.help) {
        const [admin, rpc, scope] = await Promise.all([loadClasses('admin'), loadClasses('rpc'), helpScope(opts)]);
        const ops = await Promise.all(
          rpcOperationNames()
            .filter((n) => n === 'identify' || n === 'query')
            .map(async (n) => (await loadOperation('rpc', n))!),
        );
        via.out(overviewHelp(admin, rpc, ops, scope));
        return EXIT.ok;
      }
      throw usageError('missing class: hostadm call <class> <action> [key=value ...]', 'hostadm call --help lists the classes');
    }
    const target = parseTarget(cls);

    // rpc operations without an action: rpc/identify, rpc/query.
    if (target.namespace === 'rpc' && isOperation('rpc', target.name)) {
      const op = (await loadOperation('rpc', target.name))!;
      if (opts.help) {
        via.out(operationHelp(op));
        return EXIT.ok;
      }
      if (target.name.startsWith('auth')) throw usageError(`rpc/${target.name} is how hostadm signs in; use hostadm login / logout`);
      const args = parseActionArgs(action === undefined ? rest : [action, ...rest], opts.json);
      await checkArgs(op.args, args, { namespace: 'rpc', name: target.name });
      const session = await via.open(opts, { auth: op.access === 'none' ? 'none' : 'required' });
      try {
        printJson(await session.client.request('rpc', target.name, args), via.out);
      } finally {
        await session.close();
      }
      return EXIT.ok;
    }

    if (!isClass(target.namespace, target.name)) throw unknownClass(cls);
    const ns = target.namespace;
    if (!opts.help && action !== undefined && rest.length === 0 && opts.json === undefined) {
      const canonical = argumentFreeAction(await classEntry(ns, target.name), action);
      if (canonical !== undefined) return callAndPrint(via, opts, ns, target.name, canonical, {});
    }
    const contract = (await loadClass(target.namespace, target.name))!;
    if (opts.help || action === undefined) {
      const only = action === undefined ? undefined : resolveAction(contract, action);
      if (action !== undefined && only === undefined) throw unknownAction(cls, contract, action);
      if (action === undefined && !opts.help) {
        via.err(classHelp(target.namespace, contract));
        throw usageError(`missing action for ${cls}`);
      }
      via.out(classHelp(target.namespace, contract, only));
      return EXIT.ok;
    }
    const canonical = resolveAction(contract, action);
    if (canonical === undefined) throw unknownAction(cls, contract, action);
    const args = parseActionArgs(rest, opts.json);
    const actionContract = contract.actions[canonical]!;
    await checkArgs(actionContract.args, args, { namespace: ns, name: target.name, action: canonical });
    if (!isQueued(actionContract)) return callAndPrint(via, opts, ns, target.name, canonical, args);

    if (via.oneShotOnly) throw new NeedsOwnProcess('a queued action');
    const mode = progressMode(opts.progress);
    const session = await via.open(opts, { reconnect: opts.wait });
    try {
      const job: QueuedJob = await session.client.start(ns, target.name, canonical, args);
      if (!opts.wait) {
        for (const j of job.jobs) via.out(`${j.id}\n`);
        return EXIT.ok;
      }
      const completions = await followJobs(job.jobs, { mode, output: mode === 'none' ? 'none' : 'stderr' });
      const byId: Record<string, unknown> = {};
      job.jobs.forEach((j, i) => (byId[j.id] = completions[i]));
      printJson({ ack: job.ack, jobs: byId }, via.out);
      return completions.every(succeeded) ? EXIT.ok : EXIT.host;
    } finally {
      await session.close();
    }
  }
}
