import { readFileSync } from 'node:fs';

/** The version of the hostadm package this file ships in (client/package.json; `unknown` if unreadable). */
export function packageVersion(): string {
  try {
    return (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}
