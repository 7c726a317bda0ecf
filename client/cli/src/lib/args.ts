/**
 * Action arguments on the command line, httpie style:
 *   key=value    a string ("name=bob", "comment=Bob Smith")
 *   key:=json    a JSON value ("pid:=42", "users:='[\"a\",\"b\"]'", "clean_home:=false")
 *   a key given twice or more collects its values into an array ("services=sshd services=cron")
 *   --json '{...}'  a JSON object of arguments; key=value pairs are applied on top of it
 */
import { usageError } from './exit.ts';

export function parseActionArgs(pairs: readonly string[], json: string | undefined): Record<string, unknown> {
  let base: Record<string, unknown> = {};
  if (json !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(json);
    } catch (err) {
      throw usageError(`--json is not valid JSON: ${(err as Error).message}`);
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw usageError('--json must be a JSON object of arguments');
    base = { ...(parsed as Record<string, unknown>) };
  }
  const seen = new Map<string, unknown[]>();
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    const isJson = eq > 0 && pair[eq - 1] === ':';
    const key = eq > 0 ? pair.slice(0, isJson ? eq - 1 : eq) : '';
    if (!key) throw usageError(`not an argument: ${pair} (expected key=value or key:=json)`);
    const raw = pair.slice(eq + 1);
    let value: unknown = raw;
    if (isJson) {
      try {
        value = JSON.parse(raw);
      } catch (err) {
        throw usageError(`${key}: not valid JSON after := (${(err as Error).message}); for a plain string write ${key}=${raw}`);
      }
    }
    const list = seen.get(key) ?? [];
    list.push(value);
    seen.set(key, list);
  }
  for (const [key, values] of seen) base[key] = values.length === 1 ? values[0] : values;
  return base;
}
