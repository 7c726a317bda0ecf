/**
 * What the FreeBSD moused port reads and writes: the pointer devices in /dev, their newbus
 * descriptions from sysctl, the daemons' pid files, and moused(8)'s flags as rc.conf's
 * `moused_<device>_flags` holds them. Pure functions, tested against real published output.
 */
import { POINTER_DEFAULTS, type PointerOptions } from '@hostadm/shared/api/moused.ts';

/** Pointer device nodes moused serves: psm(4) PS/2, ums(4) USB, mse(4) bus mice. */
const POINTER_NODE = /^(psm|ums|mse)(\d+)$/;

/** The pointer device names among `ls /dev`'s entries, in unit order. */
export function parsePointerNodes(ls: string): string[] {
  return ls
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => POINTER_NODE.test(l))
    .sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
}

/** The sysctl OIDs describing a device: `psm0` → `dev.psm.0.%desc`, `%driver`, `%parent`. */
export function deviceOids(device: string): string[] {
  const m = POINTER_NODE.exec(device);
  if (!m) return [];
  return ['%desc', '%driver', '%parent'].map((leaf) => `dev.${m[1]}.${m[2]}.${leaf}`);
}

/** `sysctl <oids>` lines (`name: value`) into a map; a value may itself contain `: `. */
export function parseSysctlLines(output: string): Map<string, string> {
  const values = new Map<string, string>();
  for (const line of output.split('\n')) {
    const sep = line.indexOf(': ');
    if (sep > 0) values.set(line.slice(0, sep), line.slice(sep + 2));
  }
  return values;
}

/**
 * The devices whose daemon has a pid file in `ls /var/run`: `moused.<device>.pid` (rc.d/moused
 * started for one device, as devd does for each mouse plugged in) and `moused.pid` (the default
 * instance on `moused_port`, reported as `defaultPort`'s device).
 */
export function parseMousedPidFiles(ls: string): { devices: Set<string>; defaultInstance: boolean } {
  const devices = new Set<string>();
  let defaultInstance = false;
  for (const name of ls.split('\n').map((l) => l.trim())) {
    if (name === 'moused.pid') defaultInstance = true;
    const m = /^moused\.(.+)\.pid$/.exec(name);
    if (m?.[1]) devices.add(m[1]);
  }
  return { devices, defaultInstance };
}

/** moused(8)'s getopt string: which flags take a value. */
const TAKES_VALUE = new Set('ACEFILTUailmprtwz'.split(''));
const RESOLUTIONS = new Set(['low', 'medium-low', 'medium-high', 'high']);

interface Flag {
  letter: string;
  value?: string;
}

/** getopt(3) as moused parses its arguments: clustered letters (`-VH`), values attached or next. */
function getopt(words: readonly string[]): { flags: Flag[]; rest: string[] } {
  const flags: Flag[] = [];
  let i = 0;
  for (; i < words.length; i++) {
    const word = words[i] as string;
    if (word === '--') {
      i++;
      break;
    }
    if (!word.startsWith('-') || word === '-') break;
    for (let j = 1; j < word.length; j++) {
      const letter = word[j] as string;
      if (!TAKES_VALUE.has(letter)) {
        flags.push({ letter });
        continue;
      }
      const attached = word.slice(j + 1);
      flags.push({ letter, value: attached !== '' ? attached : (words[++i] ?? '') });
      break;
    }
  }
  return { flags, rest: words.slice(i) };
}

/**
 * The options a flags value sets, the rest at moused's defaults, and the flags the interface does not
 * cover (`-F 200`, `-H`, other `-m` mappings...) kept aside so a rewrite keeps them. `-A exp[,offset]`,
 * `-a x[,y]` and `-T distance[,time[,after]]` give their first number; `-m 1=3 -m 3=1` is left-handed.
 */
export function parseMousedFlags(value: string): { options: PointerOptions; other: string[] } {
  const options = { ...POINTER_DEFAULTS };
  const other: string[] = [];
  const { flags, rest } = getopt(value.trim().split(/\s+/).filter(Boolean));
  const mappings = flags.filter((f) => f.letter === 'm').map((f) => f.value);
  const leftHanded = mappings.includes('1=3') && mappings.includes('3=1');
  if (leftHanded) options.hand_mode = 'left';
  for (const { letter, value: v = '' } of flags) {
    const first = v.split(',')[0] ?? '';
    if (letter === '3') options.emulate_button_3 = 'true';
    else if (letter === 'V') options.virtual_scrolling = 'true';
    else if (letter === 'A' && /^\d+(\.\d+)?$/.test(first)) options.accel_exponential = first;
    else if (letter === 'a' && /^\d+(\.\d+)?$/.test(first)) options.accel_linear = first;
    else if (letter === 'T' && /^\d+$/.test(first)) options.terminate_drift_threshold_pixels = first;
    else if (letter === 'r' && RESOLUTIONS.has(v)) options.resolution = v;
    else if (letter === 'm' && leftHanded && (v === '1=3' || v === '3=1')) continue;
    else other.push(`-${letter}`, ...(TAKES_VALUE.has(letter) ? [v] : []));
  }
  return { options, other: [...other, ...rest] };
}

/** The flags for an option set: only what differs from moused's defaults, then the kept flags. */
export function mousedFlags(options: PointerOptions, other: readonly string[] = []): string {
  const words: string[] = [];
  if (options.emulate_button_3 === 'true') words.push('-3');
  if (options.hand_mode === 'left') words.push('-m', '1=3', '-m', '3=1');
  if (options.virtual_scrolling === 'true') words.push('-V');
  if (Number(options.accel_exponential) !== 1) words.push('-A', options.accel_exponential);
  if (Number(options.accel_linear) !== 1) words.push('-a', options.accel_linear);
  if (options.resolution !== POINTER_DEFAULTS.resolution) words.push('-r', options.resolution);
  if (Number(options.terminate_drift_threshold_pixels) !== 0) words.push('-T', options.terminate_drift_threshold_pixels);
  return [...words, ...other].join(' ');
}
