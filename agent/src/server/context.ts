/** The shapes the request pipeline passes around. Transports create connections; handlers see contexts. */
import type { Logger } from 'pino';
import type { AgentDb } from '../store/db.ts';
import type { Platform } from '../platforms/types.ts';
import type { EventBus } from '../events/bus.ts';
import type { Audit, AuditRetention } from './audit.ts';
import type { SessionStore, Session } from './sessions.ts';
import type { Blacklist } from './blacklist.ts';
import type { SignInGate, SignInGateConfig } from './sign-in-gate.ts';
import type { SslChallenges } from './ssl-auth.ts';
import type { KeyRegistry } from './keys.ts';
import type { Dispatcher } from '../jobs/dispatcher.ts';
import type { HostKey } from './host-key.ts';
import type { Background } from '../jobs/background.ts';

export type Transport = 'websocket' | 'rest' | 'bridge';

/**
 * One client connection (a WebSocket, one REST call, or later a relayed client). Auth state lives
 * here, so a token is bound to the connection that signed in or resumed.
 */
export interface Connection {
  readonly id: string;
  readonly transport: Transport;
  /** Peer address as the socket reports it (never a forwarded header). */
  readonly address: string;
  /** SPKI PEM of the TLS client certificate, when the peer presented one. */
  readonly tlsClientKey?: string;
  token: string | null;
  /** Send an unsolicited envelope (events); absent for REST. */
  push?(envelope: unknown): void;
  /** Close the connection (blacklisted, expired); absent for REST. */
  close?(code: number, reason: string): void;
  /** Set by the pipeline when the connection must close once the current reply is sent. */
  closeAfterReply?: { code: number; reason: string };
}

export interface AgentConfig {
  tokenTtlSeconds: number;
  sslWindowSeconds: number;
  idleCloseSeconds: number;
  unauthenticatedCloseSeconds: number;
  maxFrameBytes: number;
  maxInFlightPerConnection: number;
  allowPasswordAuth: boolean;
  blacklist: {
    failures: number;
    windowSeconds: number;
    blockSeconds: number;
    /** Loopback peers are never blocked; only tests turn this off to exercise the real path. */
    exemptLoopback: boolean;
  };
  /** Validate every reply against its contract (tests and development); a mismatch becomes a 500. */
  strictReplies: boolean;
  /** Password sign-in bounds (sign-in-gate.ts). */
  passwordChecks: SignInGateConfig;
  /** Concurrent WebSocket connections from one address; more are refused with HTTP 429. */
  maxConnectionsPerAddress: number;
  /** Bytes queued for a peer that does not read before its connection is closed (1013). */
  maxSendBufferBytes: number;
  /** How long and how much of the audit log is kept (server/audit.ts). */
  audit: AuditRetention;
  /** How often the snapshot scheduler looks at the clock for schedules that have fallen due. */
  schedulerTickMs: number;
}

export interface Clock {
  now(): number;
}

/** Everything a handler may use. */
export interface AgentServices {
  readonly config: AgentConfig;
  readonly clock: Clock;
  readonly db: AgentDb;
  readonly platform: Platform;
  readonly events: EventBus;
  readonly sessions: SessionStore;
  readonly blacklist: Blacklist;
  readonly passwordChecks: SignInGate;
  readonly keys: KeyRegistry;
  readonly sslChallenges: SslChallenges;
  readonly audit: Audit;
  readonly jobs: Dispatcher;
  readonly hostKey: HostKey;
  readonly logger: Logger;
  /** Timers of classes that work on their own (schedules); stopped when the agent stops. */
  readonly background: Background;
}

export interface RequestContext {
  readonly services: AgentServices;
  readonly connection: Connection;
  /** Present once authenticated. */
  readonly session: Session | null;
  /** What the handler adds to this request's audit record (job ids, affected names). */
  /** `readOnly`: set by the pipeline for reads, which are counted rather than written row by row. */
  readonly audit: { detail: string; readOnly?: boolean };
}

/** A request context after authentication. */
export interface AuthedContext extends RequestContext {
  readonly session: Session;
}
