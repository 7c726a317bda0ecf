/**
 * Every package a workspace's code imports at run time is declared in that workspace's package.json
 * (an undeclared one works in the monorepo by hoisting and breaks for whoever installs the package
 * alone), and every `exports` entry names a file that exists.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { builtinModules } from 'node:module';
import { existsSync, globSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('../..', import.meta.url).pathname;
const WORKSPACES = ['shared', 'agent', 'bridge', 'client', 'console'];
const builtins = new Set(builtinModules);

/** The package a bare specifier names (`@a/b/c` → `@a/b`, `x/y` → `x`), or null for builtins and schemes. */
function packageOf(specifier: string): string | null {
  if (specifier.startsWith('.') || specifier.startsWith('/') || /^[a-z]+:/.test(specifier)) return null;
  const parts = specifier.split('/');
  const name = specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
  return builtins.has(name) ? null : name;
}

function runtimeImports(workspace: string): Map<string, string> {
  const found = new Map<string, string>();
  const files = globSync('**/*.ts', { cwd: join(root, workspace), exclude: (f) => f.includes('node_modules') }).filter(
    (f) =>
      !f.endsWith('.test.ts') &&
      !f.endsWith('.d.ts') &&
      !f.includes('test-workers/') &&
      !f.endsWith('.config.ts') &&
      !f.startsWith('examples/') &&
      !f.includes('/examples/'),
  );
  for (const file of files) {
    const text = readFileSync(join(root, workspace, file), 'utf8');
    // Type-only imports vanish at run time.
    for (const m of text.matchAll(/^\s*(?:import|export)\s+(?!type\s)[^'";]*?from\s+'([^']+)'|import\('([^']+)'\)/gm)) {
      const name = packageOf(m[1] ?? m[2] ?? '');
      if (name && !found.has(name)) found.set(name, file);
    }
  }
  return found;
}

for (const workspace of WORKSPACES) {
  test(`${workspace}: every package its code imports is a dependency, and every export names a file`, () => {
    const manifest = JSON.parse(readFileSync(join(root, workspace, 'package.json'), 'utf8')) as {
      name: string;
      dependencies?: Record<string, string>;
      devDependencies?: Record<string, string>;
      exports?: Record<string, string>;
    };
    const declared = new Set([...Object.keys(manifest.dependencies ?? {}), manifest.name]);
    // The Workers runtime is bundled by wrangler from the repository (its tooling is a devDependency).
    // So is the console's page (src/), by Vite into dist/: what it bundles is a devDependency.
    const devOk = new Set(workspace === 'bridge' || workspace === 'console' ? Object.keys(manifest.devDependencies ?? {}) : []);
    const bundled = (file: string) => file.includes('runtime/workers/') || (workspace === 'console' && file.startsWith('src/'));
    const missing = [...runtimeImports(workspace)].filter(([name, file]) => !declared.has(name) && !(devOk.has(name) && bundled(file)));
    assert.deepEqual(
      missing.map(([name, file]) => `${name} (imported by ${workspace}/${file})`),
      [],
      'declare these in dependencies',
    );
    for (const [subpath, target] of Object.entries(manifest.exports ?? {})) {
      if (target.includes('*')) continue;
      assert.ok(existsSync(join(root, workspace, target)), `exports["${subpath}"] names ${target}, which does not exist`);
    }
  });
}
