/**
 * The one request pipeline every transport calls: parse → identify (no auth) → authenticate →
 * route → authorize → validate → handler → reply. Transports only translate frames; nothing here
 * knows whether a request came over WebSocket, REST or a bridge.
 */
import { errorEnvelope, responseEnvelope, type ReplyEnvelope } from '@hostadm/shared/protocol/envelope.ts';
import { requestEnvelopeSchema } from '@hostadm/shared/protocol/request-envelope.ts';
import { badRequest, HostadmError, notFound, toHostadmError, unauthorized, unsupported } from '@hostadm/shared/protocol/errors.ts';
import { jsonNestingExceeds } from '@hostadm/shared/protocol/json-depth.ts';
import { LIMITS } from '@hostadm/shared/protocol/limits.ts';
import { adminClasses, rpcClasses, eventOperations } from '@hostadm/shared/api/index.ts';
import { canonicalTarget } from '@hostadm/shared/protocol/original-names.ts';
import { identify, query } from '@hostadm/shared/api/rpc.ts';
import type { ClassContract } from '@hostadm/shared/protocol/define.ts';
import type { ServedClasses } from '../classes/types.ts';
import { QueuedActions } from '../jobs/queued-actions.ts';
import { serveClasses, type ServedClass } from './served-classes.ts';
import type { AgentServices, AuthedContext, Connection, RequestContext } from './context.ts';
import type { Session } from './sessions.ts';
import { authorize, subsystemKey, subsystemsFor } from './access.ts';
import { isAuthOperation, runAuthOperation } from './auth-ops.ts';
import { fieldErrors, invalidArgs, parseOrThrow } from './validate.ts';
import { viewerOf } from '../events/audience.ts';

export class Pipeline {
  readonly services: AgentServices;
  private readonly served: Map<string, ServedClass>;

  /** Builds every class once; queued classes register their job types before the dispatcher restores jobs. */
  constructor(services: AgentServices, classes: ServedClasses) {
    this.services = services;
    this.served = serveClasses(services, classes, new QueuedActions(services.jobs));
  }

  /** Contracts of the classes this agent serves, for `query` and help texts. */
  servedContracts(): ClassContract[] {
    return [...this.served.values()].map((s) => s.contract);
  }

  /**
   * Handles one raw frame (a JSON string or an already-parsed object). Resolves with the reply
   * envelope; never rejects.
   */
  async handle(connection: Connection, raw: unknown): Promise<ReplyEnvelope> {
    let id = '';
    let namespace = 'rpc';
    let name = '';
    let action = '';
    let session: Session | null = null;
    let reply: ReplyEnvelope;
    const audit: RequestContext['audit'] = { detail: '' };
    try {
      id = idOf(raw);
      const parsed = parseFrame(raw);
      id = parsed.id;
      namespace = parsed.namespace;
      name = parsed.name;
      const outcome = await this.dispatch(connection, parsed, audit, (resolved) => (action = resolved));
      session = outcome.session;
      reply = responseEnvelope(id, namespace, outcome.args);
      if (session) this.services.sessions.touch(session);
    } catch (cause) {
      const err = toHostadmError(cause);
      if (err.code === 'HOST_ERROR') this.services.logger.error({ err: cause, namespace, name }, 'request failed');
      // The spec's 401 envelope always carries namespace "rpc".
      reply = errorEnvelope(id, err.code === 'UNAUTHORIZED' ? 'rpc' : namespace, err.toArgs());
      session ??= this.currentSession(connection);
    }
    if (session && !(namespace === 'rpc' && isAuthOperation(name))) {
      // Audited under the spec's names, whichever spelling the request used.
      const who = { user: session.user, address: connection.address, transport: connection.transport, ...canonicalTarget(namespace, name), action };
      // Every change and every refusal is a row; a read that succeeded is only counted (audit.ts).
      if (audit.readOnly && reply.name !== 'error') this.services.audit.summarise(who);
      else this.services.audit.record({ ...who, code: reply.name === 'error' ? reply.args.code : 200, detail: audit.detail });
    }
    return reply;
  }

  /** The session the connection holds, or null (unknown, expired, or moved to another connection). */
  currentSession(connection: Connection): Session | null {
    if (!connection.token) return null;
    const session = this.services.sessions.lookup(connection.token);
    // REST presents its token on every call; a socket holds the one it signed in or resumed with.
    if (!session || (connection.transport !== 'rest' && session.connectionId !== connection.id)) {
      connection.token = null;
      return null;
    }
    return session;
  }

  /** `noteAction` learns the action as soon as it is known, so a refused request is audited with it. */
  private async dispatch(
    connection: Connection,
    req: { namespace: string; name: string; args: unknown },
    audit: RequestContext['audit'],
    noteAction: (action: string) => void,
  ): Promise<{ args: unknown; session: Session | null; action: string }> {
    const { services } = this;
    const base: RequestContext = { services, connection, session: null, audit };

    if (req.namespace === 'rpc' && req.name === 'identify') {
      const reply = {
        type: 'server' as const,
        hostname: await services.platform.hostname(),
        host_key: services.hostKey.publicRaw,
        host_key_fingerprint: services.hostKey.fingerprint,
      };
      return { args: identify.reply.parse(reply), session: null, action: '' };
    }
    if (req.namespace === 'rpc' && isAuthOperation(req.name)) {
      const args = await runAuthOperation(req.name, req.args, base);
      return { args, session: null, action: '' };
    }

    const session = this.currentSession(connection);
    if (!session) throw unauthorized();
    const ctx: AuthedContext = { ...base, session };

    if (req.namespace === 'events') {
      audit.readOnly = true;
      return { args: this.events(req.name, req.args, ctx), session, action: '' };
    }
    if (req.namespace === 'rpc' && req.name === 'query') {
      audit.readOnly = true;
      return { args: query.reply.parse(subsystemsFor(session, this.servedContracts())), session, action: '' };
    }

    // The original's names (`sysadm`, `iocage`, ...) route to the spec's class; messages keep the request's.
    const target = canonicalTarget(req.namespace, req.name);
    const label = `${req.namespace}/${req.name}`;
    const served = this.served.get(`${target.namespace}/${target.name}`);
    const contract = served?.contract ?? lookupContract(target.namespace, target.name);
    if (!contract) throw notFound(`unknown class ${label}`);
    if (!served) {
      const reason = services.platform.unavailable?.[target.name as keyof typeof services.platform.unavailable];
      if (reason) throw unsupported(`${label} is unsupported on this host: ${reason}`);
      throw notFound(`${label} is not available on this host (platform ${services.platform.kind})`);
    }

    if (req.args !== null && typeof req.args === 'object' && 'action' in req.args && typeof req.args.action === 'string') {
      noteAction(req.args.action);
    }
    const { action, rest } = splitAction(req.args, contract, label);
    noteAction(action);
    const actionContract = contract.actions[action];
    const handler = served.handlers[action];
    if (!actionContract || !handler) throw new Error(`contract/handler mismatch for ${subsystemKey(contract)} ${action}`);
    authorize(session, contract, action, actionContract.access, label);
    // `read` and `authenticated` actions change nothing (the contracts give every change `write` or above).
    audit.readOnly = actionContract.access === 'read' || actionContract.access === 'authenticated';
    const args = parseOrThrow(actionContract.args, rest, `${label} ${action}`);
    const result = await handler(args, ctx);
    if (services.config.strictReplies) {
      const check = actionContract.reply.safeParse(result);
      if (!check.success) {
        throw new HostadmError('HOST_ERROR', `reply of ${subsystemKey(contract)} ${action} breaks its contract: ${JSON.stringify(fieldErrors(check.error))}`);
      }
    }
    return { args: result, session, action };
  }

  private events(name: string, rawArgs: unknown, ctx: AuthedContext): unknown {
    const { connection, services } = ctx;
    if (!connection.push) throw notFound('events exist over WebSocket only');
    const push = connection.push.bind(connection);
    // Events are for signed-in connections only, and each goes to those who may see it, judged by who
    // is signed in at delivery: once the session expires or moves to another connection the
    // subscription ends instead of leaking job output to a signed-out socket.
    const viewer = () => {
      const session = this.currentSession(connection);
      return session ? viewerOf(session) : null;
    };
    if (name === 'subscribe') {
      const names = parseOrThrow(eventOperations.subscribe.args, rawArgs, 'events/subscribe');
      services.events.subscribe({ id: connection.id, push, viewer }, names);
      return { subscribe: names };
    }
    if (name === 'unsubscribe') {
      const names = parseOrThrow(eventOperations.unsubscribe.args, rawArgs, 'events/unsubscribe');
      services.events.unsubscribe(connection.id, names);
      return { unsubscribe: names };
    }
    throw notFound(`unknown events request ${name}; expected subscribe or unsubscribe`);
  }
}

function parseFrame(raw: unknown): { id: string; namespace: string; name: string; args: unknown } {
  let value = raw;
  if (typeof raw === 'string') {
    if (jsonNestingExceeds(raw, LIMITS.maxJsonDepth)) throw badRequest(`the request is nested deeper than ${LIMITS.maxJsonDepth} levels`);
    try {
      value = JSON.parse(raw);
    } catch {
      throw badRequest('the request is not valid JSON');
    }
  }
  const result = requestEnvelopeSchema.safeParse(value);
  if (!result.success) throw invalidArgs(result.error, 'the request envelope');
  return { ...result.data, args: result.data.args };
}

/** The request's id when it has a usable one, so even a malformed request's error can be matched. */
function idOf(raw: unknown): string {
  return raw !== null && typeof raw === 'object' && 'id' in raw && (typeof raw.id === 'string' || typeof raw.id === 'number') ? String(raw.id) : '';
}

function lookupContract(namespace: string, name: string): ClassContract | undefined {
  const table: Record<string, ClassContract> | undefined = namespace === 'admin' ? adminClasses : namespace === 'rpc' ? rpcClasses : undefined;
  if (!table || !Object.hasOwn(table, name)) return undefined;
  return table[name];
}

/** Separates `action` from the arguments and resolves the original's alternative spellings. */
function splitAction(args: unknown, contract: ClassContract, label: string): { action: string; rest: Record<string, unknown> } {
  if (args === null || typeof args !== 'object' || Array.isArray(args)) {
    throw badRequest(`args of ${label} must be an object holding \`action\``, [{ field: 'action', message: 'required' }]);
  }
  const { action, ...rest } = args as Record<string, unknown>;
  if (typeof action !== 'string' || action === '') {
    throw badRequest(`action: required for ${label}`, [{ field: 'action', message: 'required' }]);
  }
  const resolved = Object.hasOwn(contract.actions, action) ? action : contract.actionAliases[action];
  if (!resolved || !Object.hasOwn(contract.actions, resolved)) {
    const known = Object.keys(contract.actions).join(', ');
    throw badRequest(`action: unknown action "${action}" of ${label}; expected one of: ${known}`, [{ field: 'action', message: 'unknown action' }]);
  }
  return { action: resolved, rest };
}
