/**
 * Who may see what a job or an event reveals: its owner, and users with full access. Events, job
 * lists and job logs all decide with `maySee`, so a limited user never sees another user's commands
 * or output (docs/protocol.md "Events", docs/security.md).
 */
import type { Session } from '../server/sessions.ts';

/** Everyone signed in may see it, or only `owner` and full-access users ('' = no recorded owner: full access only). */
export type Audience = { kind: 'everyone' } | { kind: 'owner'; owner: string };

export interface Viewer {
  readonly user: string;
  readonly full: boolean;
}

export const EVERYONE: Audience = { kind: 'everyone' };

export function ownedBy(owner: string): Audience {
  return { kind: 'owner', owner };
}

export function viewerOf(session: Pick<Session, 'user' | 'level'>): Viewer {
  return { user: session.user, full: session.level === 'full' };
}

export function maySee(viewer: Viewer, audience: Audience): boolean {
  if (audience.kind === 'everyone' || viewer.full) return true;
  return audience.owner !== '' && audience.owner === viewer.user;
}
