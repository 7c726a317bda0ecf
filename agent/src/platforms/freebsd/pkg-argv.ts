/**
 * The pkg(8) command of each queued pkg action, as FreeBSD runs it (and as the simulated host shows
 * it). Origins were validated by the contract (never a leading `-`) and pkg matches an argument with
 * a `/` against origins. `-y` answers pkg's questions; `pkg upgrade -n` is the dry run whose exit
 * status says whether anything would change; `pkg audit -F -r` fetches the vulnerability database
 * first and lists the packages that depend on each vulnerable one.
 */
import type { PkgJob } from '../ports/pkg.ts';

export function pkgJobArgv(job: PkgJob): string[] {
  switch (job.action) {
    case 'pkg_audit':
      return ['pkg', 'audit', '-F', '-r'];
    case 'pkg_upgrade':
      return ['pkg', 'upgrade', '-y'];
    case 'pkg_check_upgrade':
      return ['pkg', 'upgrade', '-n'];
    case 'pkg_update':
      return ['pkg', 'update', ...(job.force ? ['-f'] : [])];
    case 'pkg_lock':
      return ['pkg', 'lock', '-y', ...job.origins];
    case 'pkg_unlock':
      return ['pkg', 'unlock', '-y', ...job.origins];
    case 'pkg_install':
      return ['pkg', 'install', '-y', ...(job.repo ? ['-r', job.repo] : []), ...job.origins];
    case 'pkg_remove':
      return ['pkg', 'delete', '-y', ...(job.recursive ? ['-R'] : []), ...job.origins];
    case 'pkg_autoremove':
      return ['pkg', 'autoremove', '-y'];
  }
}
