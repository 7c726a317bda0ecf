/**
 * The `jail` port: jails managed by iocage on FreeBSD, namespace containers over a release root on
 * Linux, a simulated iocage in sim. Names and properties reaching it were validated by the contract
 * (no leading `-`, no `/`, no `..`; `<property>=<value>` pairs of safe characters); a port resolves a
 * jail by uuid or tag and answers 404 naming `jail` when there is none. The handler shapes the wire.
 */

/** One row of `listjails`. */
export interface JailInfo {
  uuid: string;
  tag: string;
  boot: 'on' | 'off';
  /** `up` or `down`. */
  state: string;
  /** Jail id while it runs (the init's PID on Linux), `-` when down. */
  jid: string;
  /** Address, or `-`. */
  ip4: string;
  /** `basejail`, `thickjail`, `template`, ... */
  type: string;
}

/** One row of `df`. */
export interface JailUsage {
  uuid: string;
  tag: string;
  crt: string;
  res: string;
  qta: string;
  use: string;
  ava: string;
}

/**
 * What a start or stop did: the progress messages in order, or, when the jail already was in the
 * asked state, the INFO text saying so (nothing was done).
 */
export type JailProgress = { changed: true; messages: string[] } | { changed: false; info: string };

export type JailCreateSwitch = '-b' | '-c' | '-e';

export interface JailCreated {
  uuid: string;
  /** The tool's report, one line each (`label: text`). */
  lines: string[];
}

export type JailCleanScope = 'jails' | 'releases' | 'templates' | 'all';

/** A property as given: `[name, value]`, in the order given. */
export type JailProp = readonly [string, string];

export interface JailPort {
  list(): Promise<JailInfo[]>;
  /** Every property of the jail (`prop` `all`), or just `prop` (404 naming `prop` when it has none). */
  settings(jail: string, prop: string): Promise<Record<string, string>>;
  /** `prop` of every downloaded release (or, with iocage, of every jail), keyed by uuid: `{TAG, <prop>}`. */
  releaseSettings(prop: string): Promise<Record<string, Record<string, string>>>;
  usage(): Promise<JailUsage[]>;
  start(jail: string): Promise<JailProgress>;
  stop(jail: string): Promise<JailProgress>;
  /** Re-applies the jail's resource limits to it while it runs (409 when it is down). */
  cap(jail: string): Promise<void>;
  /** Rolls back everything it made when a step fails. */
  create(props: readonly JailProp[], switches: JailCreateSwitch | undefined): Promise<JailCreated>;
  clone(jail: string, props: readonly JailProp[]): Promise<JailCreated>;
  /** 409 and nothing changed while the jail runs. */
  destroy(jail: string): Promise<string[]>;
  /** Runs argv inside the running jail as `user`; its standard output (409 when the jail is down). */
  exec(jail: string, user: string, argv: readonly string[]): Promise<string>;
  /** Destroys what hostadm created of that kind; 409 and nothing changed while any of it runs or is in use. */
  clean(scope: JailCleanScope): Promise<void>;
  activePool(): Promise<string>;
  activate(pool: string): Promise<void>;
  deactivate(pool: string): Promise<void>;
}

/** `a=b c=d` (validated by the contract) as pairs, in order. */
export function splitProps(text: string | undefined): JailProp[] {
  if (text === undefined) return [];
  return text
    .trim()
    .split(/ +/)
    .filter((pair) => pair !== '')
    .map((pair) => {
      const eq = pair.indexOf('=');
      return [pair.slice(0, eq), pair.slice(eq + 1)] as const;
    });
}

/**
 * Output lines as the original keyed them: the text before the first `:` is the label and the rest
 * (leading space kept) its text; a line without `:` is a label with empty text. A label seen before
 * gets ` (2)`, ` (3)`, ... so no line is lost.
 */
export function labelLines(lines: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of lines) {
    const line = raw.replace(/\s+$/, '');
    if (line.trim() === '') continue;
    const colon = line.indexOf(':');
    const label = (colon < 0 ? line : line.slice(0, colon)).trim() || ':';
    const text = colon < 0 ? '' : line.slice(colon + 1);
    let key = label;
    for (let n = 2; Object.hasOwn(out, key); n++) key = `${label} (${n})`;
    out[key] = text;
  }
  return out;
}

/** Progress messages as the wire's keys: trimmed, each once, with empty-string values. */
export function progressKeys(messages: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of messages) {
    const key = m.trim();
    if (key !== '') out[key] = '';
  }
  return out;
}
