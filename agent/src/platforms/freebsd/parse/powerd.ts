/**
 * powerd(8)'s command-line flags, as rc.conf's `powerd_flags` holds them: read into the option
 * record and written back from it. rc.subr passes the variable unquoted, so the shell splits it on
 * blanks; no value of ours contains one. powerd's frequencies are in MHz, the interface's in Hz.
 */
import { POWERD_DEFAULTS, type PowerdOptions } from '@hostadm/shared/api/powerd.ts';

/** powerd's own spellings of the modes (powerd.c `parse_mode`), short ones included. */
const MODE_WORDS: Record<string, string> = {
  maximum: 'maximum',
  max: 'maximum',
  minimum: 'minimum',
  min: 'minimum',
  adaptive: 'adaptive',
  adp: 'adaptive',
  hiadaptive: 'hiadaptive',
  hadp: 'hiadaptive',
};

const FLAG_TO_OPTION: Record<string, keyof PowerdOptions> = {
  '-a': 'ac_power_mode',
  '-b': 'battery_power_mode',
  '-n': 'unknown_power_mode',
  '-i': 'adaptive_lower_threshold_percent',
  '-r': 'adaptive_raise_threshold_percent',
  '-M': 'max_cpu_freq',
  '-m': 'min_cpu_freq',
  '-p': 'polling_interval_ms',
};

const HZ_PER_MHZ = 1_000_000;

/**
 * What powerd runs with when a flag is absent: the interface's defaults, except that powerd(8)
 * itself uses `hiadaptive` on AC and when the power source is unknown ("The default mode is adaptive
 * for battery power and hiadaptive for the rest"), so that is what a host without flags reports.
 */
const POWERD_RUNS_WITH: PowerdOptions = { ...POWERD_DEFAULTS, ac_power_mode: 'hiadaptive', unknown_power_mode: 'hiadaptive' };

/**
 * The options a `powerd_flags` value sets, the rest at what powerd uses without them. Flags powerd knows but the
 * interface does not (`-P pidfile`, `-v`, `-N`) are kept aside in `other` so a rewrite keeps them;
 * a value powerd would refuse leaves that option at its default.
 */
export function parsePowerdFlags(flags: string): { options: PowerdOptions; other: string[] } {
  const options = { ...POWERD_RUNS_WITH };
  const other: string[] = [];
  const words = flags.trim().split(/\s+/).filter(Boolean);
  for (let i = 0; i < words.length; i++) {
    const word = words[i] as string;
    const option = FLAG_TO_OPTION[word];
    if (!option) {
      other.push(word);
      // -P takes the pidfile as its value.
      if (word === '-P' && i + 1 < words.length) other.push(words[++i] as string);
      continue;
    }
    const value = words[++i] ?? '';
    if (option.endsWith('_mode')) {
      const mode = MODE_WORDS[value];
      if (mode) options[option] = mode;
    } else if (/^-?\d+$/.test(value)) {
      options[option] = option.endsWith('_cpu_freq') ? String(Number(value) * HZ_PER_MHZ) : String(Number(value));
    }
  }
  return { options, other };
}

/**
 * The `powerd_flags` value for an option set: every mode, threshold and the interval spelled out
 * (so the file says what runs), the frequency limits only when set (powerd has no "no limit" value).
 * A limit below 1 MHz cannot be given to powerd: `tooFine` names the option that is.
 */
export function powerdFlags(options: PowerdOptions, other: readonly string[] = []): { flags: string } | { tooFine: keyof PowerdOptions } {
  const words: string[] = [];
  for (const [flag, option] of Object.entries(FLAG_TO_OPTION)) {
    const value = options[option];
    if (option.endsWith('_cpu_freq')) {
      if (value === '-1') continue;
      const mhz = Math.floor(Number(value) / HZ_PER_MHZ);
      if (mhz < 1) return { tooFine: option };
      words.push(flag, String(mhz));
    } else {
      words.push(flag, value);
    }
  }
  return { flags: [...words, ...other].join(' ') };
}

/** rc.subr's `checkyesno`: YES, TRUE, ON and 1 in any case. */
export function rcYes(value: string): boolean {
  return /^(yes|true|on|1)$/i.test(value.trim());
}
