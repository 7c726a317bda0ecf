/**
 * How powerd's modes and limits map onto Linux cpufreq: each mode to the first governor the policy
 * offers from a list ordered by how closely it behaves like powerd's mode, and the interface's Hz to
 * cpufreq's kHz. Pure, so the choice is tested against real `scaling_available_governors` lines.
 */

/**
 * powerd's modes in cpufreq terms: `maximum` pins the highest frequency (performance), `minimum` the
 * lowest (powersave); `adaptive` follows the load and prefers saving (schedutil, else conservative,
 * which ramps slowly, else ondemand); `hiadaptive` follows the load and prefers speed (ondemand jumps
 * straight to the top). intel_pstate and amd-pstate in active mode offer only performance and
 * powersave, where powersave is itself load-following: that is the adaptive modes' last resort.
 */
const PREFERENCES: Record<string, readonly string[]> = {
  maximum: ['performance'],
  minimum: ['powersave'],
  adaptive: ['schedutil', 'conservative', 'ondemand', 'powersave'],
  hiadaptive: ['ondemand', 'schedutil', 'conservative', 'performance'],
};

/** The governors a policy offers (`scaling_available_governors`: names separated by blanks). */
export function parseGovernors(text: string): string[] {
  return text.trim().split(/\s+/).filter(Boolean);
}

/** The governor for a powerd mode among those offered, or null when none of its list is. */
export function governorFor(mode: string, available: readonly string[]): string | null {
  return (PREFERENCES[mode] ?? []).find((g) => available.includes(g)) ?? null;
}

/**
 * The kHz a frequency limit in Hz writes into scaling_min_freq / scaling_max_freq, kept inside
 * what the hardware does (`cpuinfo_min_freq`..`cpuinfo_max_freq`); `-1` (no limit) is the bound itself.
 */
export function limitKhz(hz: string, bound: number, range: { min: number; max: number }): number {
  if (hz === '-1') return bound;
  return Math.min(range.max, Math.max(range.min, Math.floor(Number(hz) / 1000)));
}
