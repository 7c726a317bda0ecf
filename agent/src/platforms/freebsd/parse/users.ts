/**
 * Parsers for what FreeBSD's account tools print. Pure functions, tested against real output in
 * test/fixtures/freebsd/users/.
 */
import type { GroupEntry, UserAccount } from '../../ports/users.ts';

/**
 * `pw usershow -a`: one master.passwd(5) line per account with the password shown as `*` or
 * empty: `name:pw:uid:gid:class:change:expire:gecos:home:shell`. The 7-field V7 form (`pw
 * usershow -7`, no class/change/expire) is read too, with those fields as '' / '0' / '0'.
 */
export function parseUsershow(text: string): UserAccount[] {
  const out: UserAccount[] = [];
  for (const line of text.split('\n')) {
    const f = line.split(':');
    if (f.length === 10) {
      const [name, , uid, gid, cls, change, expire, comment, home, shell] = f as [
        string,
        string,
        string,
        string,
        string,
        string,
        string,
        string,
        string,
        string,
      ];
      out.push({ name, uid, gid, class: cls, change: change || '0', expire: expire || '0', comment, home_dir: home, shell });
    } else if (f.length === 7) {
      const [name, , uid, gid, comment, home, shell] = f as [string, string, string, string, string, string, string];
      out.push({ name, uid, gid, class: '', change: '0', expire: '0', comment, home_dir: home, shell });
    }
  }
  return out.filter((u) => u.name !== '' && !u.name.startsWith('#'));
}

/** `pw groupshow -a`: group(5) lines `name:pw:gid:member,member`. */
export function parseGroupshow(text: string): GroupEntry[] {
  const out: GroupEntry[] = [];
  for (const line of text.split('\n')) {
    const f = line.split(':');
    if (f.length !== 4 || f[0] === '' || (f[0] as string).startsWith('#')) continue;
    out.push({ name: f[0] as string, gid: f[2] as string, members: (f[3] as string).split(',').filter((m) => m !== '') });
  }
  return out;
}

/**
 * `personacrypt list -r`: `<disk>: <<camcontrol ident>> <gpart size>` per disk. Lines that gpart
 * printed about disks it could not read (`gpart: No such geom: da1.`) are not devices.
 */
export function parsePersonacryptList(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    if (line.startsWith('gpart')) continue;
    const m = /^([A-Za-z0-9]+): (.*)$/.exec(line.trimEnd());
    if (m) out[m[1] as string] = m[2] as string;
  }
  return out;
}
