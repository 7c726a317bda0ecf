/**
 * What the Linux jails read back from text: an account in a jail's /etc/passwd (execjail's user)
 * and byte counts written as ZFS writes them (`df`: `96K`, `1.04G`), so both platforms read alike.
 */

export interface JailAccount {
  name: string;
  uid: number;
  gid: number;
  home: string;
}

/** The passwd(5) line of `user`, or null; malformed lines are skipped. */
export function parsePasswdAccount(passwd: string, user: string): JailAccount | null {
  for (const line of passwd.split('\n')) {
    const fields = line.split(':');
    if (fields.length < 7 || fields[0] !== user) continue;
    const uid = Number(fields[2]);
    const gid = Number(fields[3]);
    if (!/^\d+$/.test(fields[2] ?? '') || !/^\d+$/.test(fields[3] ?? '')) continue;
    return { name: user, uid, gid, home: fields[5] || '/' };
  }
  return null;
}

/** 1536 → `1.50K`, as zfs(8) prints sizes: three significant digits, binary units, `B`-less. */
export function humanBytes(bytes: number): string {
  if (!Number.isFinite(bytes) || bytes < 0) return '-';
  const units = ['B', 'K', 'M', 'G', 'T', 'P'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  if (unit === 0) return `${bytes}B`;
  const digits = value >= 100 ? 0 : value >= 10 ? 1 : 2;
  return `${value.toFixed(digits)}${units[unit]}`;
}
