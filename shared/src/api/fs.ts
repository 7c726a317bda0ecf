import { z } from 'zod';
import { defineClass, action, lazy } from '../protocol/define.ts';
import { absolutePath, keyedBy, str } from './fields.ts';

/**
 * Directory entry (`dirlist`, keyed by entry name): a directory `{dir: true}`, a file `{group, owner, size}`,
 * or (the original's third form, for a symbolic link that does not point at a directory) `{symlink: true, target}`.
 */
export const directoryEntryRecord = lazy(() =>
  z
    .union([
      z.strictObject({ dir: z.literal(true).describe('Always the boolean `true`') }).describe('A directory'),
      z
        .strictObject({
          symlink: z.literal(true).describe('Always the boolean `true`'),
          target: str('Path the link points to'),
        })
        .describe('A symbolic link (not to a directory)'),
      z
        .strictObject({
          group: str('Owning group'),
          owner: str('Owning user'),
          size: z.number().int().nonnegative().describe('Size in bytes (a number)'),
        })
        .describe('A file'),
    ])
    .describe('A directory entry'),
);

export const fs = defineClass({
  namespace: 'admin',
  name: 'fs',
  description: 'Directory listing',
  limitedAccess: 'read',
  actions: {
    dirlist: action({
      description: 'List a directory, hidden entries included (the caller must be allowed to read it)',
      args: () => z.strictObject({ dir: absolutePath('Directory to list, an absolute path') }),
      reply: () => z.object({ dirlist: keyedBy('Entry name', directoryEntryRecord(), 'Entries keyed by name') }).describe('Directory listing'),
      access: 'read',
    }),
  },
});
