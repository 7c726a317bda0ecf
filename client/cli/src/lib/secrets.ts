/**
 * A secret given one of three ways, so it never has to be on the command line (where `ps` and shell
 * history show it): a flag, a file (first line, trailing newline dropped), or an environment variable.
 * Two at once is an error, not a silent precedence.
 */
import { readFileSync } from 'node:fs';
import { usageError } from './exit.ts';

export interface SecretSources {
  /** e.g. `--join`, and the value given to it */
  flag: [name: string, value: string | undefined];
  file: [name: string, path: string | undefined];
  env: string;
}

export function readSecret(sources: SecretSources): string | undefined {
  const [flagName, flagValue] = sources.flag;
  const [fileFlag, path] = sources.file;
  const fromEnv = process.env[sources.env];
  const given = [flagValue !== undefined && flagName, path !== undefined && fileFlag, fromEnv !== undefined && fromEnv !== '' && sources.env].filter(Boolean);
  if (given.length > 1) throw usageError(`give the secret one way only, not ${given.join(' and ')}`);
  if (flagValue !== undefined) return flagValue;
  if (path !== undefined) {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      throw usageError(`${fileFlag} ${path}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}`);
    }
    const secret = text.split(/\r?\n/, 1)[0] ?? '';
    if (secret === '') throw usageError(`${fileFlag} ${path}: the file is empty`);
    return secret;
  }
  return fromEnv !== undefined && fromEnv !== '' ? fromEnv : undefined;
}
