/**
 * `HostadmClient`: one connection to a host (directly now, through a bridge later: see transport.ts),
 * requests matched by id, sign-in by password, token or key, events, job handles, request timeouts and
 * cancellation, and reconnects that resume the session with `auth_token` and re-subscribe.
 *
 * This file is the public face and the wiring; each concern lives in its own file next to it:
 * - connection.ts: open, drop, reconnect with backoff, close (the lifecycle and its states);
 * - requests.ts: request ids, replies matched back, timeouts and cancellation;
 * - session.ts: sign-in methods, the session token, resuming it on a new connection, keep-alive;
 * - subscriptions.ts: event subscriptions shared per name and restored after a reconnect;
 * - calls.ts: contract lookup and argument/reply checks; queued-jobs.ts: job handles for queued actions;
 * - options.ts: `ConnectOptions` and their defaults; emitter.ts: `client.on(...)`.
 *
 * Platform-neutral: no Node imports. The WebSocket constructor is passed in or taken from globalThis.
 */
import type { z } from 'zod';
import type { identify as identifyContract, query as queryContract } from '@hostadm/shared/api/rpc.ts';
import { parseEnvelope } from '@hostadm/shared/protocol/envelope.ts';
import { isQueued } from '../contracts.ts';
import { HostadmClientError, HostadmRequestError, targetLabel } from '../errors.ts';
import { privateKeyOf, signChallenge, textToBase64, type PrivateKeyMaterial } from '../key-auth.ts';
import { namespaceProxy, type AdminClient, type RpcClient } from '../proxy.ts';
import type { CallOptions, DispatcherEvent, EventName, HostadmEvent, JobHandle, QueuedJob } from '../types.ts';
import { ContractCalls } from './calls.ts';
import { Connection, type ClientState } from './connection.ts';
import { ClientEmitter, type ClientEvents } from './emitter.ts';
import { authList, resolveSettings, type ConnectOptions } from './options.ts';
import { QueuedJobs } from './queued-jobs.ts';
import { RequestCorrelator } from './requests.ts';
import { SessionKeeper, type AuthMethod, type Session } from './session.ts';
import { eventOf, Subscriptions, type EventListener, type EventStream } from './subscriptions.ts';

type RequestArgs = unknown;

type IdentifyReply = z.input<(typeof identifyContract)['reply']>;
type QueryReply = z.input<(typeof queryContract)['reply']>;

export class HostadmClient {
  /** `admin` classes, one typed method per action: `client.admin.users.usershow()`. */
  readonly admin: AdminClient;
  /** `rpc` classes with actions: `client.rpc.dispatcher.run({job1: 'sleep 1'})`. */
  readonly rpc: RpcClient;
  /**
   * Event subscriptions. `subscribe` returns an async iterator; `listen` calls back instead. Both
   * subscribe on the host (shared per name) and unsubscribe when closed. `on('event', cb)` sees every
   * event the connection receives, whoever subscribed.
   */
  readonly events: {
    subscribe(names: EventName | string | readonly string[]): EventStream;
    listen(names: EventName | string | readonly string[], callback: (event: HostadmEvent) => void): EventListener;
  };

  private readonly emitter = new ClientEmitter();
  private readonly connection: Connection;
  private readonly requests: RequestCorrelator;
  private readonly sessions: SessionKeeper;
  private readonly subscriptions: Subscriptions;
  private readonly calls: ContractCalls;
  private readonly jobs: QueuedJobs;

  constructor(options: ConnectOptions) {
    const settings = resolveSettings(options);
    // The parts reach each other only through the callbacks given here; nothing runs before `open`.
    this.connection = new Connection(settings, {
      message: (text) => this.route(text),
      signIn: (transport, signal) => this.sessions.establish(transport, signal),
      resume: async (transport, signal) => {
        await this.sessions.establish(transport, signal);
        await this.subscriptions.resubscribe(transport);
      },
      opened: () => this.sessions.startKeepAlive(),
      suspended: () => this.sessions.stopKeepAlive(),
      transportLost: (transport, lost) => this.requests.failSentOn(transport, lost),
      disconnected: (info) => this.emitter.emit('disconnect', info),
      reconnected: (attempt) => {
        this.emitter.emit('reconnect', { attempt });
        this.jobs.recoverUnfinished();
      },
      closed: (reason, byUser, error) => {
        this.requests.failAll(reason);
        this.subscriptions.endAll(reason, byUser);
        this.jobs.failAll(reason);
        this.emitter.emit('close', byUser ? {} : { error });
      },
    });
    this.requests = new RequestCorrelator(this.connection, settings.requestTimeoutMs, () => this.sessions.touch());
    const send = this.requests.send.bind(this.requests);
    const state = () => this.connection.state;
    this.sessions = new SessionKeeper(
      { send, state, lastSentAt: () => this.requests.lastSentAt, sessionStarted: (session) => this.emitter.emit('session', session) },
      settings.authMethods,
      settings.keepAlive,
    );
    this.subscriptions = new Subscriptions({ send, state, closedError: () => this.connection.closedError(), validateArgs: settings.validateArgs });
    this.calls = new ContractCalls(send, settings);
    this.jobs = new QueuedJobs(this.calls, this.subscriptions);
    this.admin = namespaceProxy<AdminClient>('admin', (ns, cls, action, args, opts) => this.invoke(ns, cls, action, args, opts));
    this.rpc = namespaceProxy<RpcClient>('rpc', (ns, cls, action, args, opts) => this.invoke(ns, cls, action, args, opts));
    this.events = {
      subscribe: (names) => this.subscriptions.subscribe(names),
      listen: (names, callback) => this.subscriptions.listen(names, callback),
    };
  }

  /** Where the client connects (for messages). */
  get description(): string {
    return this.connection.description;
  }

  get state(): ClientState {
    return this.connection.state;
  }

  /** The current session, or null when not signed in. */
  get session(): Session | null {
    const current = this.sessions.current;
    return current ? { ...current } : null;
  }

  // ---------------------------------------------------------------- lifecycle

  /** Opens the connection and signs in with the configured methods. Used by `connect`. */
  async open(options: { signal?: AbortSignal } = {}): Promise<void> {
    await this.connection.open(options.signal);
  }

  /** Closes the connection. Waiting requests and job handles reject with ConnectionError. */
  async close(): Promise<void> {
    this.connection.close();
  }

  /** Subscribe to client events: `event` (host events), `disconnect`, `reconnect`, `session`, `close`. Returns an unsubscribe function. */
  on<K extends keyof ClientEvents>(type: K, listener: (value: ClientEvents[K]) => void): () => void {
    return this.emitter.on(type, listener);
  }

  // ---------------------------------------------------------------- requests

  /**
   * Sends any request and resolves with the reply's `args`; an error envelope rejects with
   * HostadmRequestError. No contract checks: the escape hatch for anything.
   */
  request(namespace: string, name: string, args?: RequestArgs, options: CallOptions = {}): Promise<unknown> {
    return this.requests.send({ namespace, name }, args, options);
  }

  /** An action by name, checked against its contract. Queued actions resolve to their acknowledgement. */
  async call(namespace: 'admin' | 'rpc', className: string, action: string, args: unknown = {}, options: CallOptions = {}): Promise<unknown> {
    return this.calls.call(namespace, className, action, args, options);
  }

  /**
   * A class action whose arguments the caller has already checked against its contract (`action` its
   * canonical name, `args` an object that passes): sent as `call` sends it, with no second check, so
   * the contract is not loaded (the CLI's calls without arguments; it checks before connecting).
   * With `validateReplies` the contract loads and the reply is checked. Queued actions resolve to
   * their acknowledgement, as with `call`.
   */
  async callChecked(
    namespace: 'admin' | 'rpc',
    className: string,
    action: string,
    args: Record<string, unknown> = {},
    options: CallOptions = {},
  ): Promise<unknown> {
    return this.calls.sendChecked(namespace, className, action, args, options);
  }

  /** A queued action (or `dispatcher run`): resolves once acknowledged, with a handle that follows the job. */
  async start(namespace: 'admin' | 'rpc', className: string, action: string, args: unknown = {}, options: CallOptions = {}): Promise<QueuedJob> {
    const { canonical, contract } = await this.calls.prepare(namespace, className, action, args);
    const target = { namespace, name: className, action: canonical };
    if (!isQueued(contract)) throw new HostadmRequestError(400, `${targetLabel(target)} is not a queued action; use call()`, target, { local: true });
    return this.jobs.start(namespace, className, canonical, contract, args, options);
  }

  /** What the typed proxy calls: `start` for queued actions, `call` otherwise. */
  async invoke(namespace: 'admin' | 'rpc', className: string, action: string, args: unknown = {}, options: CallOptions = {}): Promise<unknown> {
    const { canonical, contract } = await this.calls.prepare(namespace, className, action, args);
    return isQueued(contract)
      ? this.jobs.start(namespace, className, canonical, contract, args, options)
      : this.calls.sendPrepared(namespace, className, canonical, contract, args, options);
  }

  /** Follows a job that already exists (for example one started with `--no-wait`). */
  async job(id: string, options: CallOptions = {}): Promise<JobHandle> {
    return this.jobs.follow(id, options);
  }

  /** `rpc/identify`: what the other end is. Needs no sign-in. */
  identify(options: CallOptions = {}): Promise<IdentifyReply> {
    return this.calls.operation('identify', {}, options) as Promise<IdentifyReply>;
  }

  /** `rpc/query`: the subsystems available to the caller and their access. */
  query(options: CallOptions = {}): Promise<QueryReply> {
    return this.calls.operation('query', {}, options) as Promise<QueryReply>;
  }

  // ---------------------------------------------------------------- session

  /** Signs in (again) on the open connection; methods are tried in order. */
  async signIn(auth: AuthMethod | readonly AuthMethod[], options: CallOptions = {}): Promise<Session> {
    const transport = await this.connection.whenReady();
    return this.sessions.authenticate(transport, authList(auth), options.signal);
  }

  /** `auth_clear`: ends the session on the host (the token stops working everywhere). */
  async signOut(options: CallOptions = {}): Promise<void> {
    await this.sessions.signOut(options);
  }

  /**
   * Registers a key for the signed-in user (`settings register_ssl_cert`): `pub_key` is the base64 of the
   * certificate (or public key) PEM, `proof` the session token signed with the private key.
   */
  async registerKey(key: PrivateKeyMaterial & { certPem: string; nickname?: string; email?: string }, options: CallOptions = {}): Promise<void> {
    const session = this.sessions.current;
    if (!session) throw new HostadmClientError('sign in before registering a key');
    const args: Record<string, string> = {
      pub_key: textToBase64(key.certPem),
      proof: await signChallenge(privateKeyOf(key), 'register-proof', session.token),
    };
    if (key.nickname !== undefined) args.nickname = key.nickname;
    if (key.email !== undefined) args.email = key.email;
    await this.calls.call('admin', 'settings', 'register_ssl_cert', args, options);
  }

  // ---------------------------------------------------------------- incoming frames

  /** One frame from the transport: a reply settles its request; an event goes to jobs, streams and `on('event')`. */
  private route(text: string): void {
    const env = parseEnvelope(text);
    if (!env) return;
    if (this.requests.settle(env)) return;
    const event = eventOf(env);
    if (!event) return;
    if (event.name === 'dispatcher') this.jobs.onEvent(event.args as DispatcherEvent);
    this.subscriptions.deliver(event);
    this.emitter.emit('event', event);
  }
}

/** Opens a client: connects, signs in with `auth`, and resolves once it is ready. */
export async function connect(options: ConnectOptions): Promise<HostadmClient> {
  const client = new HostadmClient(options);
  await client.open();
  return client;
}
