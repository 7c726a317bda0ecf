/** top(1)'s column formats, which the FreeBSD tool prints and the Linux port reproduces. */

/** top(1)'s memory column: KiB below 10000, then MiB, then GiB (FreeBSD top's format_k). */
export function formatKiB(kib: number): string {
  if (!Number.isFinite(kib) || kib < 0) return '0K';
  if (kib < 10_000) return `${Math.round(kib)}K`;
  const mib = Math.round(kib / 1024);
  if (mib < 10_000) return `${mib}M`;
  return `${Math.round(mib / 1024)}G`;
}

/** top(1)'s TIME column: `M:SS` up to 999 minutes, then hours `N.NH`, then days `N.ND`. */
export function formatCpuTime(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  if (s < 1000 * 60) return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
  const hours = s / 3600;
  if (hours < 1000) return `${hours.toFixed(1)}H`;
  return `${(hours / 24).toFixed(1)}D`;
}
