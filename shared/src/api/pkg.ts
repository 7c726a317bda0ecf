import { z } from 'zod';
import { defineClass, action, lazy } from '../protocol/define.ts';
import { boolArg, keyedBy, noArgs, oneOrMany, onOff, pendingAck, safeName, str } from './fields.ts';
import { pkgCategory, pkgOrigin, safePhrase } from './fields-storage.ts';

const repoName = lazy(() => safeName('Repository name (one of `list_repos`); default `local`, the installed packages'));
const origin = lazy(() => pkgOrigin('Package origin, `<category>/<name>`'));
const origins = (description: string) => oneOrMany(origin(), description);

export const packageRecord = lazy(() =>
  z
    .object({
      arch: str('Architecture'),
      automatic: str('Installed as a dependency, `0` / `1`'),
      comment: str('One-line summary'),
      dep_formula: str('Dependency formula'),
      dependencies: z.array(str('Origin')).describe('Origins of the dependencies (with `result: full`)').optional(),
      desc: str('Long description'),
      files: z.array(str('Path')).describe('Installed files (with `result: full`)').optional(),
      flatsize: str('Installed size in bytes'),
      icon: str('Icon URL (annotation)').optional(),
      id: str('Database id'),
      licenselogic: str('License logic'),
      licenses: z.array(str('License')).describe('Licenses (with `result: full`)').optional(),
      locked: z.enum(['0', '1']).describe('`1` when locked (skipped by upgrades)'),
      maintainer: str('Maintainer address'),
      manifestdigest: str('Manifest digest'),
      message: str('Install message'),
      mtree_id: str('mtree id'),
      name: str('Package name'),
      options: keyedBy('Option name', onOff('Option state'), 'Build options (with `result: full`)').optional(),
      origin: str('Origin, `<category>/<name>`'),
      pkg_format_version: str('Package format version'),
      prefix: str('Installation prefix'),
      repo_type: str('Repository type (annotation)').optional(),
      repository: str('Repository the package came from (annotation)').optional(),
      screen1: str('Screenshot URL (annotation)').optional(),
      shlibs_provided: z.array(str('Library')).describe('Shared libraries provided (with `result: full`)').optional(),
      shlibs_required: z.array(str('Library')).describe('Shared libraries required (with `result: full`)').optional(),
      time: str('Installation time (epoch seconds)'),
      version: str('Version'),
      www: str('Project web site'),
    })
    .describe('A package'),
);

export const packageSearchRecord = lazy(() =>
  z
    .object({
      arch: str('Architecture'),
      cksum: str('Checksum'),
      comment: str('One-line summary'),
      cpe: str('CPE identifier').optional(),
      dep_formula: str('Dependency formula'),
      desc: str('Long description'),
      flatsize: str('Installed size in bytes'),
      icon: str('Icon URL').optional(),
      id: str('Database id'),
      licenselogic: str('License logic'),
      maintainer: str('Maintainer address'),
      manifestdigest: str('Manifest digest'),
      name: str('Package name'),
      no_provide_shlib: str('Provides no shared library flag').optional(),
      olddigest: str('Old-format digest'),
      origin: str('Origin, `<category>/<name>`'),
      osversion: str('Operating-system version built for'),
      path: str('Path of the package file in the repository'),
      pkg_format_version: str('Package format version'),
      pkgsize: str('Package file size in bytes'),
      prefix: str('Installation prefix'),
      screen1: str('Screenshot URL').optional(),
      screen2: str('Screenshot URL').optional(),
      version: str('Version'),
      www: str('Project web site'),
    })
    .describe('A package search result'),
);

/** `results_order` plus one search result per origin. */
export const packageSearchResults = lazy(() =>
  z
    .object({ results_order: z.array(str('Origin')).describe('Origins in result order') })
    .catchall(packageSearchRecord())
    .describe('Search results: `results_order` plus one entry per origin'),
);

/** A repository is a name string; `local` is always one of them. */
export const repositoryName = lazy(() => str('Repository name; valid as `repo`'));

/** `{<action>: pendingAck}`, the answer of every queued pkg action. */
const pending = <K extends string>(key: K) => z.object({ [key]: pendingAck() } as Record<K, ReturnType<typeof pendingAck>>);

export const pkg = defineClass({
  namespace: 'admin',
  name: 'pkg',
  description: 'Software packages',
  limitedAccess: 'read',
  actions: {
    pkg_info: action({
      description: 'Show packages (installed ones by default), keyed by origin',
      args: () =>
        z.strictObject({
          repo: repoName().optional(),
          pkg_origins: origins('Origins to show (an array, or one string); default all').optional(),
          category: pkgCategory('Only packages of this category').optional(),
          result: z.enum(['full', 'simple']).describe('`full` adds dependencies, options, licenses and other multi-valued fields').optional(),
        }),
      reply: () => z.object({ pkg_info: keyedBy('Package origin', packageRecord(), 'Package records keyed by origin') }),
      access: 'read',
    }),
    pkg_search: action({
      description: 'Search a repository by name, comment and description',
      args: () =>
        z.strictObject({
          search_term: safePhrase('Search phrase'),
          repo: repoName().optional(),
          category: pkgCategory('Only packages of this category').optional(),
          search_excludes: z.array(safePhrase('Phrase')).describe('Phrases that exclude a result').optional(),
        }),
      reply: () => z.object({ pkg_search: packageSearchResults() }),
      access: 'read',
    }),
    list_categories: action({
      description: 'List the non-empty package categories of a repository',
      args: () => z.strictObject({ repo: repoName().optional() }),
      reply: () => z.object({ list_categories: z.array(str('Category name')).describe('Non-empty category names') }),
      access: 'read',
    }),
    list_repos: action({
      description: 'List package repositories',
      args: noArgs,
      reply: () => z.object({ list_repos: z.array(repositoryName()).describe('Repository names; `local` is always one') }),
      access: 'read',
    }),
    pkg_audit: action({
      description: 'Audit installed packages for known vulnerabilities (queued; result by event)',
      args: noArgs,
      reply: () => pending('pkg_audit'),
      access: 'read',
      queued: 'pkg_queue',
      ack: 'proc_id',
    }),
    pkg_upgrade: action({
      description: 'Upgrade all installed packages (queued; messages by event)',
      args: noArgs,
      reply: () => pending('pkg_upgrade'),
      access: 'write',
      queued: 'pkg_queue',
      ack: 'proc_id',
    }),
    pkg_check_upgrade: action({
      description: 'Check for package updates (queued; result by event)',
      args: noArgs,
      reply: () => pending('pkg_check_upgrade'),
      access: 'read',
      queued: 'pkg_queue',
      ack: 'proc_id',
    }),
    pkg_update: action({
      description: 'Update the repository catalogues (queued; result by event)',
      args: () => z.strictObject({ force: boolArg('`true` resynchronizes all databases with all repositories').optional() }),
      reply: () => pending('pkg_update'),
      access: 'write',
      queued: 'pkg_queue',
      ack: 'proc_id',
    }),
    pkg_lock: action({
      description: 'Lock packages so upgrades skip them (queued)',
      args: () => z.strictObject({ pkg_origins: origins('Origins to lock (one string or an array)') }),
      reply: () => pending('pkg_lock'),
      access: 'write',
      queued: 'pkg_queue',
      ack: 'proc_id',
    }),
    pkg_unlock: action({
      description: 'Unlock packages (queued)',
      args: () => z.strictObject({ pkg_origins: origins('Origins to unlock (one string or an array)') }),
      reply: () => pending('pkg_unlock'),
      access: 'write',
      queued: 'pkg_queue',
      ack: 'proc_id',
    }),
    // spec: not shown — chosen: pkg_origins R (string or array) and repo O, as the original; pendingAck like the other queued actions.
    pkg_install: action({
      description: 'Install packages and their dependencies (queued)',
      args: () =>
        z.strictObject({
          pkg_origins: origins('Origins to install (one string or an array)'),
          repo: repoName().describe('Repository to install from; default any configured').optional(),
        }),
      reply: () => pending('pkg_install'),
      access: 'write',
      queued: 'pkg_queue',
      ack: 'proc_id',
    }),
    // spec: not shown — chosen: pkg_origins R (string or array) and recursive O (default `true`: also remove
    // packages that depend on them), as the original; pendingAck like the other queued actions.
    pkg_remove: action({
      description: 'Remove packages (queued)',
      args: () =>
        z.strictObject({
          pkg_origins: origins('Origins to remove (one string or an array)'),
          recursive: boolArg('Also remove packages that depend on them (default `true`)').optional(),
        }),
      reply: () => pending('pkg_remove'),
      access: 'write',
      queued: 'pkg_queue',
      ack: 'proc_id',
    }),
    // spec: not shown — chosen: no arguments, as the original; pendingAck like the other queued actions.
    pkg_autoremove: action({
      description: 'Remove packages installed as dependencies that nothing needs any more (queued)',
      args: noArgs,
      reply: () => pending('pkg_autoremove'),
      access: 'write',
      queued: 'pkg_queue',
      ack: 'proc_id',
    }),
  },
});
