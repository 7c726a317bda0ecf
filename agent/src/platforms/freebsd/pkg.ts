/**
 * pkg on FreeBSD: `pkg query` / `pkg rquery -U` with explicit formats for the reads (origins are
 * matched by pkg itself as exact arguments, never pasted into SQL as the original did), `pkg -vv` for
 * the enabled repositories (no blocking `pkg update` when none has a catalogue, as the original did),
 * and the argv of freebsd/pkg-argv.ts for the queued jobs. `pkg audit` exits 1 when it finds
 * vulnerable packages and `pkg upgrade -n` when it would upgrade: both are answers, not failures.
 */
import { HostadmError } from '@hostadm/shared/protocol/errors.ts';
import type { FreebsdContext } from './index.ts';
import type { RunResult } from '../../runner/runner.ts';
import { runOrHostError } from '../common/host-command.ts';
import { categoryOf, LOCAL_REPO, type PackageFilter, type PackageRecord, type PkgPort } from '../ports/pkg.ts';
import { pkgJobArgv } from './pkg-argv.ts';
import {
  CANDIDATE_FORMAT,
  MULTI_FORMATS,
  parseAudit,
  parseCandidates,
  parseDryRun,
  parseMulti,
  parseQuery,
  parseRepositories,
  parseRquery,
  QUERY_FORMAT,
  RQUERY_FORMAT,
  toSearchRecord,
} from './parse/pkg.ts';

const BIG = { maxOutputBytes: 256 * 1024 * 1024, timeoutMs: 120_000 };

export function freebsdPkg(ctx: FreebsdContext): PkgPort {
  const { runner } = ctx;
  /** `pkg query` or `pkg rquery -U -r <repo>` with a format, for these origins or all (`-a`). */
  const query = async (repo: string, format: string, origins?: readonly string[]): Promise<string> => {
    const head = repo === LOCAL_REPO ? ['pkg', 'query'] : ['pkg', 'rquery', '-U', '-r', repo];
    const result = await runner.run([...head, ...(origins ? [format, ...origins] : ['-a', format])], BIG);
    // 1 with origins: some are not there (the others are printed); missing ones are left out.
    if (result.code === 0 || (result.code === 1 && origins)) return result.stdout;
    throw new HostadmError('HOST_ERROR', `${head.join(' ')} failed: ${result.stderr.trim() || `exit ${result.code}`}`);
  };
  const inCategory = (filter: PackageFilter) => (r: { origin: string }) => !filter.category || categoryOf(r.origin) === filter.category;
  return {
    async repos() {
      return parseRepositories(await runOrHostError(runner, ['pkg', '-vv'], 'listing the pkg repositories failed'));
    },
    async packages(repo, filter) {
      const out = await query(repo, repo === LOCAL_REPO ? QUERY_FORMAT : RQUERY_FORMAT, filter.origins);
      const found = (repo === LOCAL_REPO ? parseQuery(out) : parseRquery(out)).filter(inCategory(filter));
      if (!filter.full || found.length === 0) return found;
      return withMultiValued(found, (format) =>
        query(
          repo,
          format,
          found.map((r) => r.origin),
        ),
      );
    },
    async candidates(repo, category) {
      return parseCandidates(await query(repo, CANDIDATE_FORMAT)).filter(inCategory(category ? { category } : {}));
    },
    async searchRecords(repo, origins) {
      const out = await query(repo, repo === LOCAL_REPO ? QUERY_FORMAT : RQUERY_FORMAT, origins);
      return (repo === LOCAL_REPO ? parseQuery(out) : parseRquery(out)).map(toSearchRecord);
    },
    async categories(repo) {
      return [
        ...new Set(
          (await query(repo, '%o'))
            .split('\n')
            .filter((o) => o.includes('/'))
            .map(categoryOf),
        ),
      ].sort();
    },
    async plan(job) {
      const argv = pkgJobArgv(job);
      const label = argv.join(' ');
      if (job.action === 'pkg_check_upgrade') {
        return {
          commands: [label],
          async work(ctx) {
            const result = await ctx.run(argv);
            const answer = result.code === 0 || result.code === 1 ? parseDryRun(result.stdout) : null;
            if (answer === null) return { success: false, reason: failed(label, result) };
            return { success: true, fields: { updates_available: answer ? 'true' : 'false' } };
          },
        };
      }
      if (job.action === 'pkg_audit') {
        return {
          commands: [label],
          async work(ctx) {
            const result = await ctx.run(argv);
            if (result.code !== 0 && result.code !== 1) return { success: false, reason: failed(label, result) };
            return { success: true, fields: { vulnerable_pkgs: parseAudit(result.stdout) } };
          },
        };
      }
      return { steps: [{ argv }] };
    },
  };
}

function failed(label: string, result: RunResult): string {
  return `"${label}" ${result.code === null ? `was killed by ${result.signal ?? 'a signal'}` : `exited with code ${result.code}`}`;
}

/** Adds the multi-valued fields, one `pkg query` per kind for all the records at once. */
async function withMultiValued(found: PackageRecord[], run: (format: string) => Promise<string>): Promise<PackageRecord[]> {
  const lists: Partial<Record<keyof typeof MULTI_FORMATS, Map<string, string[][]>>> = {};
  for (const [field, format] of Object.entries(MULTI_FORMATS) as Array<[keyof typeof MULTI_FORMATS, string]>) lists[field] = parseMulti(await run(format));
  const values = (field: keyof typeof MULTI_FORMATS, origin: string) => (lists[field]?.get(origin) ?? []).map((v) => v[0] ?? '');
  return found.map((r) => ({
    ...r,
    dependencies: values('dependencies', r.origin),
    files: values('files', r.origin),
    licenses: values('licenses', r.origin),
    shlibs_provided: values('shlibs_provided', r.origin),
    shlibs_required: values('shlibs_required', r.origin),
    options: Object.fromEntries((lists.options?.get(r.origin) ?? []).map(([key = '', value = '']) => [key, value === 'on' ? 'on' : 'off'])),
  }));
}
