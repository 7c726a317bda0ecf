/**
 * `pkg`: software packages. Reads (`pkg_info`, `pkg_search`, `list_categories`, `list_repos`) answer
 * at once; the nine changing or slow actions are queued on `pkg_queue` (one pkg process at a time)
 * and end with the spec's completion event carrying `pkg_log` and `action` (plus `updates_available`
 * for `pkg_check_upgrade`). Before anything is queued the handler checks what needs the host's state:
 * the repository exists, origins to lock, unlock or remove are installed, origins to install are in a
 * repository; anything else is a 400 naming the field, with nothing queued.
 */
import type { z } from 'zod';
import { pkg, type packageSearchResults } from '@hostadm/shared/api/pkg.ts';
import { badRequest } from '@hostadm/shared/protocol/errors.ts';
import { implementClass } from './types.ts';
import type { JobPlan } from '../jobs/queued-actions.ts';
import { rankSearch } from '../platforms/common/pkg-search.ts';
import { FULL_ONLY, LOCAL_REPO, type PackageRecord, type PkgJob, type PkgPort } from '../platforms/ports/pkg.ts';

export const pkgImpl = implementClass(pkg, ({ platform }) => {
  const port = platform.ports.pkg;
  if (!port) return null;
  const repoOf = async (repo: string | undefined): Promise<string> => {
    if (repo === undefined || repo === LOCAL_REPO) return LOCAL_REPO;
    const known = await port.repos();
    if (!known.includes(repo))
      throw badRequest(`repo: no repository ${repo} (known: ${[LOCAL_REPO, ...known].join(', ')})`, [{ field: 'repo', message: 'no such repository' }]);
    return repo;
  };
  const queue = async (job: PkgJob): Promise<JobPlan> => {
    const work = await port.plan(job);
    return { ...work, fields: { action: job.action }, logField: 'pkg_log' };
  };
  const installed = (origins: readonly string[]) => requireKnown(port, [LOCAL_REPO], origins, 'not installed');
  return {
    pkg_info: async (args) => {
      const repo = await repoOf(args.repo);
      const full = args.result === 'full';
      const records = await port.packages(repo, {
        ...(args.pkg_origins ? { origins: args.pkg_origins } : {}),
        ...(args.category ? { category: args.category } : {}),
        full,
      });
      const byOrigin: Record<string, PackageRecord> = {};
      for (const record of records) byOrigin[record.origin] = full ? record : simple(record);
      return { pkg_info: byOrigin };
    },
    pkg_search: async (args) => {
      const repo = await repoOf(args.repo);
      const order = rankSearch(await port.candidates(repo, args.category), args.search_term, args.search_excludes);
      const records = new Map((order.length ? await port.searchRecords(repo, order) : []).map((r) => [r.origin, r]));
      const found = order.filter((origin) => records.has(origin));
      const results: Record<string, unknown> = { results_order: found };
      for (const origin of found) results[origin] = records.get(origin);
      // `results_order` beside records keyed by origin: a shape TypeScript cannot state without a cast.
      return { pkg_search: results as unknown as z.output<ReturnType<typeof packageSearchResults>> };
    },
    list_categories: async (args) => ({ list_categories: await port.categories(await repoOf(args.repo)) }),
    list_repos: async () => ({ list_repos: [LOCAL_REPO, ...(await port.repos()).filter((r) => r !== LOCAL_REPO)] }),
    pkg_audit: () => queue({ action: 'pkg_audit' }),
    pkg_upgrade: () => queue({ action: 'pkg_upgrade' }),
    pkg_check_upgrade: () => queue({ action: 'pkg_check_upgrade' }),
    pkg_update: (args) => queue({ action: 'pkg_update', force: args.force === 'true' }),
    pkg_lock: async (args) => queue({ action: 'pkg_lock', origins: await installed(args.pkg_origins) }),
    pkg_unlock: async (args) => queue({ action: 'pkg_unlock', origins: await installed(args.pkg_origins) }),
    pkg_remove: async (args) => queue({ action: 'pkg_remove', origins: await installed(args.pkg_origins), recursive: args.recursive !== 'false' }),
    pkg_autoremove: () => queue({ action: 'pkg_autoremove' }),
    pkg_install: async (args) => {
      const repo = args.repo === undefined || args.repo === LOCAL_REPO ? undefined : await repoOf(args.repo);
      const origins = await requireKnown(port, repo ? [repo] : await port.repos(), args.pkg_origins, repo ? `not in repository ${repo}` : 'in no repository');
      return queue({ action: 'pkg_install', origins, ...(repo ? { repo } : {}) });
    },
  };
});

/** The origins once each, in the order asked, after checking every one is in one of `repos`. */
async function requireKnown(port: PkgPort, repos: readonly string[], asked: readonly string[], missingWord: string): Promise<string[]> {
  const origins = [...new Set(asked)];
  const known = new Set<string>();
  for (const repo of repos) for (const record of await port.packages(repo, { origins })) known.add(record.origin);
  const missing = origins.filter((o) => !known.has(o));
  if (missing.length > 0)
    throw badRequest(`pkg_origins: ${missing.join(', ')} ${missingWord}`, [{ field: 'pkg_origins', message: `${missing.join(', ')} ${missingWord}` }]);
  return origins;
}

/** A record without the multi-valued fields `result: full` adds. */
function simple(record: PackageRecord): PackageRecord {
  const copy: Record<string, unknown> = { ...record };
  for (const field of FULL_ONLY) delete copy[field];
  return copy as PackageRecord;
}
