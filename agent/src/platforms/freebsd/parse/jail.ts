/**
 * Parsers of iocage's output. Tables are read by their header, never by position, so the same code
 * reads `iocage list -l` and `iocage df -l` of the maintained Python iocage (texttable boxes: `| JID |
 * NAME | BOOT | STATE | TYPE | RELEASE | IP4 | IP6 | TEMPLATE | BASEJAIL |`, JID `None` or `-` when
 * down since 1.2.1) and the shell iocage the original drove (space-aligned `JID UUID BOOT STATE TAG
 * TYPE`): a column added or missing changes nothing. Property listings are `name:value` lines.
 */
import { shortIp4 } from '../../common/jail-book.ts';
import type { JailInfo, JailUsage } from '../../ports/jail.ts';

type Row = Record<string, string>;

const BORDER = /^\s*\+[-=+]+\+\s*$/;

/** A texttable box or a space-aligned table, as rows keyed by upper-case header; other lines are skipped. */
export function parseTable(text: string): Row[] {
  const lines = text.split('\n').map((l) => l.replace(/\s+$/, ''));
  const border = lines.find((l) => BORDER.test(l));
  if (border !== undefined) {
    // Cells are cut where the border has its `+`: a value may itself hold `|` (em0|10.1.0.5/24).
    const cuts = [...border].flatMap((c, i) => (c === '+' ? [i] : []));
    const cells = lines.filter((l) => /^\s*\|/.test(l) && !BORDER.test(l)).map((l) => cuts.slice(0, -1).map((at, i) => l.slice(at + 1, cuts[i + 1]).trim()));
    const [header, ...rows] = cells;
    if (!header) return [];
    const names = header.map((h) => h.toUpperCase());
    return rows.map((row) => Object.fromEntries(names.map((n, i) => [n, row[i] ?? ''])));
  }
  const headerAt = lines.findIndex((l) => /^\s*(JID|UUID|NAME)\s/.test(l));
  if (headerAt < 0) return [];
  const names = (lines[headerAt] ?? '')
    .trim()
    .split(/\s+/)
    .map((h) => h.toUpperCase());
  const out: Row[] = [];
  for (const line of lines.slice(headerAt + 1)) {
    // The shell iocage ends its jails at the first empty line (non-iocage jails may follow).
    if (line.trim() === '') break;
    const fields = line.trim().split(/\s+/);
    out.push(Object.fromEntries(names.map((n, i) => [n, fields[i] ?? ''])));
  }
  return out;
}

const nameOf = (row: Row) => row.NAME || row.UUID || '';

/** `iocage list -l` (either iocage). */
export function parseJailList(text: string): JailInfo[] {
  return parseTable(text)
    .filter((row) => nameOf(row) !== '')
    .map((row) => {
      const jid = row.JID ?? '-';
      return {
        uuid: row.UUID || nameOf(row),
        tag: row.TAG || nameOf(row),
        boot: row.BOOT === 'on' ? 'on' : 'off',
        state: row.STATE || 'down',
        jid: jid === '' || jid === 'None' ? '-' : jid,
        ip4: shortIp4(row.IP4 === '-' ? 'none' : row.IP4),
        type: row.TYPE || (row.BASEJAIL === 'yes' ? 'basejail' : 'jail'),
      };
    });
}

/** `iocage df -l`. */
export function parseJailUsage(text: string): JailUsage[] {
  return parseTable(text)
    .filter((row) => nameOf(row) !== '')
    .map((row) => ({
      uuid: row.UUID || nameOf(row),
      tag: row.TAG || nameOf(row),
      crt: row.CRT ?? '-',
      res: row.RES ?? '-',
      qta: row.QTA ?? '-',
      use: row.USE ?? '-',
      ava: row.AVA ?? '-',
    }));
}

/** `iocage get all <jail>`: `name:value` lines (the value may itself hold `:`). */
export function parseJailProps(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim();
    if (/^[A-Za-z0-9_.]+$/.test(name)) out[name] = line.slice(colon + 1).trim();
  }
  return out;
}

/** `iocage get -r -h <prop>`: `<name>\t<value>` lines, keyed by name with `TAG` and the property. */
export function parseRecursiveGet(text: string, prop: string): Record<string, Record<string, string>> {
  const out: Record<string, Record<string, string>> = {};
  for (const line of text.split('\n')) {
    const tab = line.indexOf('\t');
    if (tab <= 0) continue;
    const name = line.slice(0, tab).trim();
    out[name] = { TAG: name, [prop]: line.slice(tab + 1).trim() };
  }
  return out;
}

/** Progress lines of `iocage start|stop` (indentation dropped), in order. */
export function progressLines(text: string): string[] {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
}

/** The name iocage gave a new jail (`<name> successfully created!` / `cloned!`), when it says. */
export function createdName(text: string): string | null {
  return /^(\S+) successfully (?:created|cloned)!?$/m.exec(text)?.[1] ?? /Successfully created: (\S+)/.exec(text)?.[1] ?? null;
}

/** The rctl properties iocage applies (IOCRCTL.types), and the `<action>=<amount>` form of their values. */
export const RCTL_RESOURCES = [
  'cputime',
  'datasize',
  'stacksize',
  'coredumpsize',
  'memoryuse',
  'memorylocked',
  'maxproc',
  'openfiles',
  'vmemoryuse',
  'pseudoterminals',
  'swapuse',
  'nthr',
  'msgqqueued',
  'msgqsize',
  'nmsgq',
  'nsem',
  'nsemop',
  'nshm',
  'shmsize',
  'wallclock',
  'pcpu',
  'readbps',
  'writebps',
  'readiops',
  'writeiops',
] as const;
export const RCTL_VALUE = /^(deny|log|devctl|sig[a-z]+|throttle)=\d+[KMGTkmgt%]?$/;
