/**
 * @module Loads drizzle-orm's modules without Node re-reading its package.json for each of them.
 *
 * For every `.js` module it loads, Node 24 asks which package scope the file is in to tell ES modules
 * from CommonJS (`getPackageScopeConfig` in lib/internal/modules/esm/get_format.js), and its answer is
 * built by spreading the package's data, which runs the lazy `exports` getter: a JSON.parse of the
 * package's whole exports map, for each module, at resolve and again at load. drizzle-orm's exports
 * map is ~175 KB (447 entries) and its SQLite core is ~150 modules, so importing
 * `drizzle-orm/sqlite-core` parses ~50 MB of JSON into short-lived objects: 0.39 s of CPU and a
 * 260 MB resident peak, measured against 0.04 s and 53 MB with this hook (Node 24.21, this machine).
 * The garbage also makes V8 grow its young generation to the maximum and keep it.
 *
 * drizzle-orm's own modules import each other by relative paths ending in `.js` and its package.json
 * says `"type": "module"`, so such an import is an ES module at that URL: the hook answers that
 * itself, and Node's default resolver (with its package lookups) is skipped for them. Everything
 * else, including the bare `drizzle-orm/...` specifiers our code uses, resolves as before.
 *
 * Register it before the first drizzle-orm import (a module that imports drizzle statically must be
 * loaded with `import()` after this call). Where drizzle-orm is not the ES module package described
 * here (another version, another layout), nothing is registered and loading works as without it.
 */
import { existsSync, readFileSync } from 'node:fs';
import { findPackageJSON, registerHooks } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

let registered = false;

/** Registers the hook once per process; returns whether it is in place. */
export function loadDrizzleWithoutPackageJsonReparse(): boolean {
  if (registered) return true;
  let scope: string;
  try {
    // Not require.resolve('drizzle-orm/package.json'): its exports map does not export that path.
    const packageJson = findPackageJSON('drizzle-orm', import.meta.url);
    if (!packageJson) return false;
    if ((JSON.parse(readFileSync(packageJson, 'utf8')) as { type?: unknown }).type !== 'module') return false;
    scope = new URL('./', pathToFileURL(packageJson)).href;
  } catch {
    return false;
  }
  registerHooks({
    resolve(specifier, context, nextResolve) {
      if (context.parentURL?.startsWith(scope) && (specifier.startsWith('./') || specifier.startsWith('../')) && specifier.endsWith('.js')) {
        const url = new URL(specifier, context.parentURL).href;
        // A file inside the package (so under its "type": "module"): Node would say the same. Anything
        // else (a missing file, a nested package) goes to Node's resolver and gets its own answer or error.
        if (url.startsWith(scope) && !url.includes('/node_modules/', scope.length) && existsSync(fileURLToPath(url))) {
          return { url, format: 'module', shortCircuit: true };
        }
      }
      return nextResolve(specifier, context);
    },
  });
  registered = true;
  return true;
}
