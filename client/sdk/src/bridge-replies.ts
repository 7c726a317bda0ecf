/**
 * What the bridge and the host answer when they refuse something, as text and as the error it is
 * (bridge-session.ts, bridge-signin.ts, bridge-handshake.ts).
 */
import type { WireEnvelope } from '@hostadm/shared/protocol/envelope.ts';
import { HostadmRequestError } from './errors.ts';

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function messageOf(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
}

export function errorText(env: WireEnvelope): string {
  if (isRecord(env.args)) {
    const code = env.args.code;
    const message = env.args.message;
    if (typeof message === 'string') return code !== undefined ? `${String(code)} ${message}` : message;
  }
  return JSON.stringify(env.args ?? env);
}

/** A refusal envelope as the error it is, kept as the ConnectionError's cause so its code is not lost (401: sign-in refused). */
export function refusal(env: WireEnvelope, name: string): HostadmRequestError | undefined {
  if (env.name !== 'error' || !isRecord(env.args) || typeof env.args.code !== 'number') return undefined;
  return new HostadmRequestError(env.args.code, typeof env.args.message === 'string' ? env.args.message : errorText(env), { namespace: 'rpc', name });
}
