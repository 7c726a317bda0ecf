/**
 * Parsers for what the FreeBSD services port reads: `grep -H` over rc.d scripts, `service -e`,
 * `sysrc`. Pure functions, tested against real output in test/fixtures/freebsd/services.
 */
import { posix } from 'node:path';

/** The top-level `name=`, `rcvar=` and `desc=` assignments of one rc.d script, raw (still quoted). */
export interface RcHeader {
  name?: string;
  rcvar?: string;
  desc?: string;
}

/** What `list_services` needs of a script: its service name, tag and description. */
export interface RcService {
  name: string;
  tag: string;
  description: string;
}

const HEADER_LINE = /^(.*?):(name|rcvar|desc)=(.*)$/;

/**
 * `grep -H -E '^(name|rcvar|desc)=' <scripts>`: `path:key=value` lines. The first assignment of a
 * key wins, as later top-level ones are rare and the first is what `service -e` evaluates too.
 */
export function parseRcHeaders(output: string): Map<string, RcHeader> {
  const headers = new Map<string, RcHeader>();
  for (const line of output.split('\n')) {
    const m = HEADER_LINE.exec(line);
    if (!m) continue;
    const [, path, key, value] = m as unknown as [string, string, keyof RcHeader, string];
    const header = headers.get(path) ?? {};
    header[key] ??= value;
    headers.set(path, header);
  }
  return headers;
}

/**
 * The value of one shell word as sh would read it from an assignment, without expanding anything:
 * quotes are removed, `\"` `\\` `\$` `` \` `` inside double quotes lose their backslash, and
 * `$...` / backquoted parts stay as written. The word ends at unquoted blank or `;`.
 */
export function shellWord(text: string): string {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const c = text[i] as string;
    if (c === ' ' || c === '\t' || c === ';') break;
    if (c === "'") {
      const end = text.indexOf("'", i + 1);
      const stop = end === -1 ? text.length : end;
      out += text.slice(i + 1, stop);
      i = stop + 1;
    } else if (c === '"') {
      i++;
      while (i < text.length && text[i] !== '"') {
        if (text[i] === '\\' && i + 1 < text.length && '"\\$`'.includes(text[i + 1] as string)) i++;
        out += text[i];
        i++;
      }
      i++;
    } else if (c === '`') {
      const end = text.indexOf('`', i + 1);
      const stop = end === -1 ? text.length : end + 1;
      out += text.slice(i, stop);
      i = stop;
    } else if (c === '$' && (text[i + 1] === '(' || text[i + 1] === '{')) {
      // `$(...)` and `${...}` are one word even with blanks inside: keep them whole, as written.
      const open = text[i + 1] as string;
      const close = open === '(' ? ')' : '}';
      let depth = 0;
      let j = i + 1;
      for (; j < text.length; j++) {
        if (text[j] === open) depth++;
        else if (text[j] === close && --depth === 0) break;
      }
      out += text.slice(i, j + 1);
      i = j + 1;
    } else if (c === '\\' && i + 1 < text.length) {
      out += text[i + 1];
      i += 2;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

const TAG = /^[A-Za-z_][A-Za-z0-9_]*$/;
const SET_RCVAR = /^(?:`\s*set_rcvar(?:\s+(\w+))?\s*`|\$\(\s*set_rcvar(?:\s+(\w+))?\s*\))$/;

/**
 * The service a script provides, or null when it is not one that can be switched on and off: no
 * `name=` (not an rc.subr script) or no `rcvar=` (it runs at every boot, like `hostname`).
 *
 * The tag is the rcvar as rc.subr evaluates it, which is where the original went wrong: it cut
 * `${name}` and `_enable` out of the text and glued `_enable` back on, and fell back to the file
 * name for anything with a `$`. Here `${name}` / `$name` are replaced by the script's name, the old
 * `` `set_rcvar` `` form means `<name>_enable` (or `<arg>_enable`), and an rcvar naming any other
 * variable falls back to rc.subr's convention `<name>_enable`. So ipfw stays `firewall_enable`.
 */
export function rcService(path: string, header: RcHeader): RcService | null {
  if (header.name === undefined || header.rcvar === undefined) return null;
  const file = posix.basename(path);
  const rawName = shellWord(header.name);
  // `name=${name##*/}` and the like are computed at run time; the file name is what they compute.
  const name = rawName === '' || /[$`]/.test(rawName) ? file : rawName;
  let rcvar = shellWord(header.rcvar);
  if (rcvar === '') return null;
  const legacy = SET_RCVAR.exec(rcvar);
  if (legacy) rcvar = `${legacy[1] ?? legacy[2] ?? name}_enable`;
  rcvar = rcvar.replace(/\$\{name\}|\$name(?![A-Za-z0-9_])/g, name);
  if (/[$`]/.test(rcvar)) rcvar = `${name}_enable`;
  if (!TAG.test(rcvar)) return null;
  return { name, tag: rcvar, description: header.desc === undefined ? '' : shellWord(header.desc) };
}

/** `service -e`: the full paths of the enabled scripts, one a line. */
export function parseEnabledScripts(output: string): Set<string> {
  return new Set(
    output
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l.startsWith('/')),
  );
}

/** `find ... -type f`: one path a line. */
export function parsePaths(output: string): string[] {
  return output
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.startsWith('/'));
}

/** `sysrc <tag>=<value>` prints `<tag>: <before> -> <after>`; null when the line is not there. */
export function parseSysrcChange(output: string, tag: string): { before: string; after: string } | null {
  for (const line of output.split('\n')) {
    if (!line.startsWith(`${tag}: `)) continue;
    const rest = line.slice(tag.length + 2);
    const arrow = rest.indexOf(' -> ');
    if (arrow === -1) continue;
    return { before: rest.slice(0, arrow), after: rest.slice(arrow + 4) };
  }
  return null;
}

/**
 * Whether a failed start/stop failed only because the service already was in the asked state:
 * rc.subr's own messages `<name> already running? (pid=N).` and `<name> not running? (check ...)`.
 */
export function alreadyInState(action: 'start' | 'stop', output: string): boolean {
  return action === 'start' ? /\balready running\?/.test(output) : /\bnot running\?/.test(output);
}

/**
 * rc.subr's answer to a plain `start`/`stop`/`restart` of a service whose rcvar is not YES:
 * `Cannot 'start' nginx. Set nginx_enable to YES in /etc/rc.conf or use 'onestart' instead of 'start'.`
 * It exits 0 although nothing happened.
 */
export function refusedAsNotEnabled(output: string): boolean {
  return /Cannot '\w+' .* use 'one\w+' instead of '\w+'/.test(output);
}
