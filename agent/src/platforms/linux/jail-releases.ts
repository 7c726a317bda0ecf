/**
 * Linux jail releases: `releases/<name>/root` under the jail root, made once, when a jail first asks
 * for it: unpacked from a tarball supplied beside it (`releases/<name>.tar`, `.tar.gz`, `.tgz`,
 * `.tar.xz`), or made by `debootstrap --variant=minbase <name>` when `<name>` is a Debian suite and
 * debootstrap is installed. A root placed there by hand is used as is and marked as not hostadm's (so
 * no clean removes it). A failed unpack removes what it wrote.
 */
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { HostadmError } from '@hostadm/shared/protocol/errors.ts';
import type { CommandRunner } from '../../runner/runner.ts';
import { JAIL_DEFAULTS, findRelease, type BookRelease, type JailBook } from '../common/jail-book.ts';
import { run } from './jail-runtime.ts';

/** Linux's own defaults where FreeBSD's mean nothing here. */
export const LINUX_DEFAULTS: Record<string, string> = {
  ...JAIL_DEFAULTS,
  exec_start: '/bin/sleep infinity',
  exec_stop: 'none',
  stop_timeout: '10',
  interfaces: `eth0:hostadm-jails`,
  compression: 'off',
  devfs_ruleset: 'none',
  mount_devfs: '0',
  mount_fdescfs: '0',
  mount_procfs: '1',
  securelevel: 'none',
};

const RELEASE_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.+-]*$/;
const TARBALL_SUFFIXES = ['.tar', '.tar.gz', '.tgz', '.tar.xz'];
const SLOW = { timeoutMs: 20 * 60_000 };

export async function makeRelease(runner: CommandRunner, jailRoot: string, book: JailBook, name: string): Promise<{ release: BookRelease; made: boolean }> {
  const known = findRelease(book, name);
  if (known) return { release: known, made: false };
  if (!RELEASE_NAME.test(name) || name.includes('..')) {
    throw new HostadmError('BAD_REQUEST', `release ${name} is not a valid release name`, { fieldErrors: [{ field: 'props', message: 'bad release name' }] });
  }
  const dir = join(jailRoot, 'releases', name);
  const root = join(dir, 'root');
  const uuid = randomUUID();
  const record = (hostadm: boolean): BookRelease => ({
    uuid,
    tag: name,
    hostadm,
    props: { ...LINUX_DEFAULTS, tag: name, release: name, host_hostuuid: uuid, type: 'release', mountpoint: root },
  });
  if (existsSync(root)) return { release: record(false), made: false };
  const tarball = TARBALL_SUFFIXES.map((s) => join(jailRoot, 'releases', `${name}${s}`)).find((p) => existsSync(p));
  const debootstrap = /^[a-z]+$/.test(name) ? ['/usr/sbin/debootstrap', '/usr/bin/debootstrap'].find((p) => existsSync(p)) : undefined;
  if (!tarball && !debootstrap) {
    const message = `release ${name} is not here: supply ${join(jailRoot, 'releases', `${name}.tar`)} (or .tar.gz/.tar.xz), or install debootstrap for a Debian suite`;
    throw new HostadmError('NOT_FOUND', message, { fieldErrors: [{ field: 'props', message }] });
  }
  await run(runner, ['mkdir', '-p', '--', root]);
  try {
    if (tarball) await run(runner, ['tar', '-x', '--numeric-owner', '-f', tarball, '-C', root], SLOW);
    else await run(runner, [debootstrap as string, '--variant=minbase', name, root], SLOW);
  } catch (error) {
    await runner.run(['rm', '-rf', '--one-file-system', '--', dir], SLOW);
    throw error;
  }
  return { release: record(true), made: true };
}
