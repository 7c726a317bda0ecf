/**
 * The `pkg` port: the host's package manager (FreeBSD's pkg(8), apt/dpkg on Debian-like Linux, a
 * simulated pkg in sim). Origins reaching it were validated by the contract (`<category>/<name>`, no
 * leading `-`, no shell or path characters) and checked by the handler against the packages the host
 * knows; repositories against `repos()`. A queued action's port only plans the work: the pipeline
 * queues it on `pkg_queue`, one pkg process at a time.
 */
import type { z } from 'zod';
import type { packageRecord, packageSearchRecord } from '@hostadm/shared/api/pkg.ts';
import type { JobStep } from '../../jobs/queued-actions.ts';
import type { JobContext, JobOutcome } from '../../jobs/types.ts';

export type PackageRecord = z.output<ReturnType<typeof packageRecord>>;
export type PackageSearchRecord = z.output<ReturnType<typeof packageSearchRecord>>;

/** The repository name of the installed packages; always listed first by `list_repos`. */
export const LOCAL_REPO = 'local';

export interface PackageFilter {
  /** Only these origins (missing ones are left out). */
  origins?: readonly string[];
  /** Only this category (the part of the origin before `/`). */
  category?: string;
  /** Also the multi-valued fields (dependencies, files, options, licenses, shared libraries). */
  full?: boolean;
}

/** What searching ranks: every package of a repository, its text fields only. */
export interface SearchCandidate {
  origin: string;
  name: string;
  comment: string;
  desc: string;
}

/** Work a queued action runs: commands in order, or code that reports progress and adds event fields. */
export type PkgWork = { steps: readonly JobStep[] } | { commands: readonly string[]; work(ctx: JobContext): Promise<JobOutcome> };

export type PkgJob =
  | { action: 'pkg_audit' }
  | { action: 'pkg_upgrade' }
  | { action: 'pkg_check_upgrade' }
  | { action: 'pkg_update'; force: boolean }
  | { action: 'pkg_lock' | 'pkg_unlock'; origins: readonly string[] }
  | { action: 'pkg_install'; origins: readonly string[]; repo?: string }
  | { action: 'pkg_remove'; origins: readonly string[]; recursive: boolean }
  | { action: 'pkg_autoremove' };

export interface PkgPort {
  /** The configured repositories, without `local`. */
  repos(): Promise<string[]>;
  /** Packages of `repo` (`local`: the installed ones). */
  packages(repo: string, filter: PackageFilter): Promise<PackageRecord[]>;
  /** Every package of `repo` to rank for a search (`category` applied). */
  candidates(repo: string, category?: string): Promise<SearchCandidate[]>;
  /** Search records of these origins of `repo`. */
  searchRecords(repo: string, origins: readonly string[]): Promise<PackageSearchRecord[]>;
  /** Categories with at least one package in `repo`, sorted. */
  categories(repo: string): Promise<string[]>;
  /** Plans a queued action; UNSUPPORTED (with the reason) where the host cannot do it. */
  plan(job: PkgJob): Promise<PkgWork>;
}

/** `editors/vim` → `editors`. */
export function categoryOf(origin: string): string {
  return origin.slice(0, origin.indexOf('/'));
}

/** The multi-valued fields `result: full` adds. */
export const FULL_ONLY = ['dependencies', 'files', 'licenses', 'options', 'shlibs_provided', 'shlibs_required'] as const;
