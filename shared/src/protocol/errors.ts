/**
 * The closed table of error codes. Every failure that leaves the agent (or the bridge) is one of
 * these; anything else is normalized to `HOST_ERROR` at the boundary (tRPC's codes.ts idea).
 * The numeric code is what goes on the wire in `args.code`; REST uses it as the HTTP status.
 */
import { LIMITS } from './limits.ts';

export const ERROR_CODES = {
  BAD_REQUEST: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  TOO_MANY_REQUESTS: 429,
  HOST_ERROR: 500,
  UNSUPPORTED: 501,
  UNAVAILABLE: 503,
} as const;

export type ErrorCodeName = keyof typeof ERROR_CODES;
export type ErrorCode = (typeof ERROR_CODES)[ErrorCodeName];

/** The default message per code; 401 must read exactly "Unauthorized" (the spec's envelope). */
export const ERROR_MESSAGES: Record<ErrorCodeName, string> = {
  BAD_REQUEST: 'Bad Request',
  UNAUTHORIZED: 'Unauthorized',
  FORBIDDEN: 'Forbidden',
  NOT_FOUND: 'Not Found',
  CONFLICT: 'Conflict',
  PAYLOAD_TOO_LARGE: 'Payload Too Large',
  TOO_MANY_REQUESTS: 'Too Many Requests',
  HOST_ERROR: 'Host Error',
  UNSUPPORTED: 'Not Implemented',
  UNAVAILABLE: 'Service Unavailable',
};

/** One problem with one field of `args`; many are reported together in one reply. */
export interface FieldError {
  /** Dotted path inside `args`, for example `services.0` or `pid`. */
  field: string;
  message: string;
}

/**
 * The `args` of an error envelope. `errors` is present only on 400 replies about fields. Other keys
 * are what a failure that did part of its work reports under the success reply's names (the
 * `services_started` of a start that failed for one service), so a client still learns what was done.
 */
export interface ErrorArgs {
  code: ErrorCode;
  message: string;
  errors?: FieldError[];
  [partial: string]: unknown;
}

/** The one error class thrown on purpose in every layer. */
export class HostadmError extends Error {
  readonly code: ErrorCodeName;
  readonly fieldErrors: FieldError[];
  /** What was done before the failure, under the success reply's keys (never code, message or errors). */
  readonly partial: Readonly<Record<string, unknown>>;

  constructor(code: ErrorCodeName, message?: string, options?: { fieldErrors?: FieldError[]; cause?: unknown; partial?: Record<string, unknown> }) {
    super(message ?? ERROR_MESSAGES[code], options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'HostadmError';
    this.code = code;
    this.fieldErrors = options?.fieldErrors ?? [];
    this.partial = options?.partial ?? {};
  }

  get status(): ErrorCode {
    return ERROR_CODES[this.code];
  }

  toArgs(): ErrorArgs {
    // The spec fixes the 401 body to exactly {code, message:"Unauthorized"}: never leak a reason there.
    if (this.code === 'UNAUTHORIZED') return { code: 401, message: ERROR_MESSAGES.UNAUTHORIZED };
    const args: ErrorArgs = { ...this.partial, code: this.status, message: capMessage(this.message) };
    if (this.fieldErrors.length > 0) args.errors = capFieldErrors(this.fieldErrors);
    return args;
  }
}

export const badRequest = (message: string, fieldErrors?: FieldError[]) => new HostadmError('BAD_REQUEST', message, fieldErrors ? { fieldErrors } : undefined);
export const unauthorized = () => new HostadmError('UNAUTHORIZED');
export const forbidden = (message = ERROR_MESSAGES.FORBIDDEN) => new HostadmError('FORBIDDEN', message);
export const notFound = (message = ERROR_MESSAGES.NOT_FOUND) => new HostadmError('NOT_FOUND', message);
export const unsupported = (message: string) => new HostadmError('UNSUPPORTED', message);

/** Turns anything thrown into a HostadmError without losing its cause. */
export function toHostadmError(cause: unknown): HostadmError {
  if (cause instanceof HostadmError) return cause;
  const message = cause instanceof Error ? cause.message : String(cause);
  return new HostadmError('HOST_ERROR', message || ERROR_MESSAGES.HOST_ERROR, { cause });
}

/** Reverse lookup for clients: the code name of a numeric wire code, if it is in the table. */
export function errorCodeName(code: number): ErrorCodeName | undefined {
  for (const [name, value] of Object.entries(ERROR_CODES)) if (value === code) return name as ErrorCodeName;
  return undefined;
}

/**
 * At most `max` field errors; past that a last entry `{field: "(more)", message: "N more problems not
 * listed"}` says how many were left out, so a frame full of bad fields cannot make a huge reply.
 */
export function capFieldErrors(errors: FieldError[], max: number = LIMITS.maxFieldErrors): FieldError[] {
  const alreadyCapped = errors.length === max + 1 && errors[max]!.field === '(more)';
  if (errors.length <= max || alreadyCapped) return errors;
  return [...errors.slice(0, max), { field: '(more)', message: `${errors.length - max} more problems not listed` }];
}

/**
 * `field: message; field: message` for one-line error texts. Here rather than in field-errors.ts, which
 * turns zod issues into field errors: what prints an error (the CLI's exit.ts) loads no checks for it.
 */
export function summarizeFieldErrors(errors: readonly FieldError[]): string {
  return errors.map((e) => `${e.field}: ${e.message}`).join('; ');
}

/** Error messages name what went wrong; one that lists thousands of fields is cut, saying by how much. */
const MAX_MESSAGE_CHARS = 4096;

function capMessage(message: string): string {
  if (message.length <= MAX_MESSAGE_CHARS) return message;
  return `${message.slice(0, MAX_MESSAGE_CHARS)}… (${message.length - MAX_MESSAGE_CHARS} more characters)`;
}
