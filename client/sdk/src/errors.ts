/**
 * What the SDK throws. Every failure is one of three kinds, so callers (and the CLI's exit codes) can
 * tell them apart:
 * - `HostadmRequestError`: the request was refused, by the host (an error envelope: its `code` and
 *   `message`) or before sending (`local: true`, arguments that break the contract);
 * - `ConnectionError` (and its `TimeoutError`): the transport failed; whether the request ran is unknown;
 * - `ReplyContractError`: the host answered with a reply that breaks the contract (`validateReplies`).
 */
import { ERROR_CODES, errorCodeName, type ErrorCodeName, type FieldError } from '@hostadm/shared/protocol/errors.ts';

export type { ErrorCodeName, FieldError };
export { ERROR_CODES };

/** Which request a failure belongs to. */
export interface RequestTarget {
  namespace: string;
  name: string;
  /** The class action, when the request had one. */
  action?: string;
}

export function targetLabel(target: RequestTarget): string {
  return `${target.namespace}/${target.name}${target.action ? ` ${target.action}` : ''}`;
}

/** Base class of everything the SDK throws on purpose. */
export class HostadmClientError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'HostadmClientError';
  }
}

/** An error envelope from the host, or arguments refused before sending (`local`). */
export class HostadmRequestError extends HostadmClientError {
  /** The envelope's numeric code (400, 401, 403, 404, 409, 429, 500, 501, 503, ...). */
  readonly code: number;
  /** The code's name in the protocol's closed table, `UNKNOWN` for a code outside it. */
  readonly codeName: ErrorCodeName | 'UNKNOWN';
  /** Every field problem (400 only): dotted path inside `args` and what is wrong with it. */
  readonly fieldErrors: FieldError[];
  /** True when the SDK refused the arguments itself; nothing was sent. */
  readonly local: boolean;
  readonly target: RequestTarget;
  /**
   * What the host did before it failed, under the success reply's keys (for example the
   * `services_started` of a `services start` that failed for one of the services); `{}` otherwise.
   */
  readonly partial: Readonly<Record<string, unknown>>;

  constructor(
    code: number,
    message: string,
    target: RequestTarget,
    options?: { fieldErrors?: FieldError[]; local?: boolean; partial?: Record<string, unknown> },
  ) {
    super(message);
    this.name = 'HostadmRequestError';
    this.code = code;
    this.codeName = errorCodeName(code) ?? 'UNKNOWN';
    this.fieldErrors = options?.fieldErrors ?? [];
    this.local = options?.local ?? false;
    this.target = target;
    this.partial = options?.partial ?? {};
  }

  /** 401: not signed in, a failed sign-in, or the session expired. */
  get isUnauthorized(): boolean {
    return this.code === ERROR_CODES.UNAUTHORIZED;
  }
}

/** The transport failed: could not connect, the connection dropped, or the client was closed. */
export class ConnectionError extends HostadmClientError {
  /** WebSocket close code when the connection closed (1006: dropped without a close frame). */
  readonly closeCode: number | undefined;

  constructor(message: string, options?: { cause?: unknown; closeCode?: number }) {
    super(message, options);
    this.name = 'ConnectionError';
    this.closeCode = options?.closeCode;
  }
}

/**
 * An envelope the transport cannot carry (over the channel's plaintext limit through a bridge): the
 * request layer turns it into a local 413 for its caller; nothing was sent.
 */
export class EnvelopeTooLargeError extends HostadmClientError {
  constructor(message: string) {
    super(message);
    this.name = 'EnvelopeTooLargeError';
  }
}

/** No reply within the request's timeout. The request may still run on the host. */
export class TimeoutError extends ConnectionError {
  readonly timeoutMs: number;

  constructor(message: string, timeoutMs: number) {
    super(message);
    this.name = 'TimeoutError';
    this.timeoutMs = timeoutMs;
  }
}

/** The host's reply does not match the action's contract (only with `validateReplies: true`). */
export class ReplyContractError extends HostadmClientError {
  readonly fieldErrors: FieldError[];
  readonly target: RequestTarget;
  readonly reply: unknown;

  constructor(target: RequestTarget, fieldErrors: FieldError[], reply: unknown) {
    super(`the reply of ${targetLabel(target)} breaks its contract: ${fieldErrors.map((e) => `${e.field}: ${e.message}`).join('; ')}`);
    this.name = 'ReplyContractError';
    this.fieldErrors = fieldErrors;
    this.target = target;
    this.reply = reply;
  }
}

/**
 * A host reached through a bridge proved the client's key but does not know it: sign in with a user and
 * password on the channel (then `registerKey`), or have the key authorized on the host.
 */
export class KeyNotRegisteredError extends HostadmClientError {
  constructor(message: string) {
    super(message);
    this.name = 'KeyNotRegisteredError';
  }
}
