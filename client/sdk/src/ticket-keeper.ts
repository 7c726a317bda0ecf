/**
 * Where the SDK keeps a ticket between sessions: a channel's resumption ticket (docs/protocol.md
 * "Resumption") or a bridge's sign-in ticket (docs/bridge-protocol.md §2.3). Both hold a secret: keep
 * them where only the user can read them (the CLI: 0600 files in a 0700 directory).
 */
export interface TicketKeeper<T> {
  load(): T | undefined;
  /** `undefined`: forget the ticket (used, refused or expired). */
  save(ticket: T | undefined): void;
}

/** A ticket kept in memory, for the later sessions of the same factory. */
export function memoryKeeper<T>(): TicketKeeper<T> {
  let kept: T | undefined;
  return { load: () => kept, save: (ticket) => void (kept = ticket) };
}
