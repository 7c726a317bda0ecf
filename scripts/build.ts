/**
 * `npm run build`: compiles shared, agent, bridge and client to JavaScript with type declarations
 * and stages each as an installable package under dist/packages/<name>/; `npm run package` (this
 * script with --pack) also writes their tarballs to dist/ with `npm pack`.
 *
 * Why a staged copy rather than `npm pack` in each workspace: inside the monorepo the workspaces'
 * `exports` point at the .ts sources, so tests, `node file.ts`, tsc, vitest and wrangler need no
 * build step and no custom condition. A user's Node (22, no type stripping) needs JavaScript, so the
 * staged package.json points the same subpaths at the compiled .js/.d.ts with `types`/`default`
 * conditions. npm's `publishConfig` cannot override `exports`, hence the copy.
 *
 * One TypeScript program compiles all four (imports between them resolve to sources, so one program
 * is what keeps each file emitted once). `rewriteRelativeImportExtensions` turns `./x.ts` into
 * `./x.js`; imports between packages (`@hostadm/shared/protocol/limits.ts`) keep their `.ts` and the
 * staged `exports` map `./*.ts` to `./src/*.js`, so the same specifier works in both worlds.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, globSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { ensureConsoleBuilt } from './build-console.ts';
import { bundleCli } from './bundle-cli.ts';

const root = new URL('..', import.meta.url).pathname;
// `--out DIR` builds elsewhere (the packaging test builds into a temp dir, leaving dist/ alone).
const outFlag = process.argv.indexOf('--out');
const distRoot = outFlag > 0 && process.argv[outFlag + 1] ? resolve(process.argv[outFlag + 1] ?? '') : join(root, 'dist');
const staging = join(distRoot, 'packages');
const emitDir = join(distRoot, 'emit');

interface PackageSpec {
  /** workspace folder */
  dir: string;
  /** what `@hostadm/<name>/x.ts` means: the folder (in the workspace) its `exports` map `./*` to */
  subpathRoot: string;
  /** source globs, relative to the workspace */
  sources: string[];
  /** subpath → source file (relative to subpathRoot), beyond the `./*.ts` pattern */
  entries: Record<string, string>;
  bin?: Record<string, string>;
  description: string;
  /** A package staged from part of a workspace: its own name, folder under dist/packages and dependencies. */
  as?: { name: string; folder: string; dependencies: string[] };
  /** Folders copied as they are (the console's built files). */
  copied?: string[];
}

const PACKAGES: PackageSpec[] = [
  {
    dir: 'shared',
    subpathRoot: 'src',
    sources: ['src/**/*.ts'],
    entries: {},
    description: 'hostadm protocol: envelopes, contracts (zod), limits and the hsc1 channel',
  },
  {
    dir: 'agent',
    subpathRoot: 'src',
    sources: ['src/**/*.ts'],
    entries: { '.': 'agent.ts' },
    description: 'hostadm agent: serves the admin/rpc interface of a host',
  },
  {
    dir: 'bridge',
    subpathRoot: 'src',
    // The Workers runtime is deployed with wrangler from the repository, not installed from npm (see `excluded`).
    sources: ['src/**/*.ts'],
    entries: { '.': 'runtime/node/index.ts' },
    description: 'hostadm bridge (Node): relays end-to-end encrypted envelopes between clients and agents',
  },
  {
    dir: 'client',
    subpathRoot: '.',
    sources: ['sdk/src/**/*.ts', 'cli/src/**/*.ts', 'cli/src/**/*.cts'],
    entries: { './sdk': 'sdk/src/index.ts', './sdk/node': 'sdk/src/node.ts', './sdk/browser': 'sdk/src/browser.ts' },
    bin: { hostadm: 'bin/hostadm' },
    description: 'hostadm client: the typed SDK and the hostadm command line',
  },
  {
    // The SDK alone, for applications, browser bundles and Workers: no CLI, no agent or bridge, and so
    // no native dependency (ws is plain JavaScript; bufferutil stays an optional speed-up of ws).
    dir: 'client',
    subpathRoot: 'sdk/src',
    sources: ['sdk/src/**/*.ts'],
    entries: { '.': 'index.ts', './node': 'node.ts', './browser': 'browser.ts' },
    description: 'hostadm SDK: typed calls, events and jobs to hostadm agents, directly or end to end through a bridge (Node, browsers, Workers)',
    as: { name: '@hostadm/sdk', folder: 'sdk', dependencies: ['@hostadm/shared', 'ws', 'zod'] },
  },
  {
    // The web console as the agent and the bridge serve it: the built files (dist/, Preact, uPlot and the
    // SDK already bundled in) and the Node code that serves them; nothing to install at run time.
    dir: 'console',
    subpathRoot: '.',
    sources: ['server/**/*.ts'],
    entries: {},
    description: 'hostadm web console: the built page and how the agent and the bridge serve it',
    as: { name: '@hostadm/console', folder: 'console', dependencies: [] },
    copied: ['dist'],
  },
];

const excluded = (file: string) => file.endsWith('.test.ts') || file.includes('/runtime/workers/') || file.includes('/node_modules/');

/**
 * TS2877: "this import uses a '.ts' extension to resolve to an input TypeScript file, but will not be
 * rewritten during emit because it is not a relative path": exactly the cross-package imports the
 * staged `exports` map (see above), so that one is expected.
 */
const EXPECTED_DIAGNOSTICS = new Set([2877]);

function compile(): void {
  const base = ts.getParsedCommandLineOfConfigFile(join(root, 'agent/tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => fail([d]) });
  if (!base) throw new Error('cannot read agent/tsconfig.json');
  const files = PACKAGES.flatMap((p) => globSync(p.sources, { cwd: join(root, p.dir) }).map((f) => join(root, p.dir, f))).filter((f) => !excluded(f));
  const options: ts.CompilerOptions = {
    ...base.options,
    noEmit: false,
    declaration: true,
    rewriteRelativeImportExtensions: true,
    rootDir: root,
    outDir: emitDir,
    removeComments: false,
    sourceMap: false,
  };
  const program = ts.createProgram(files, options);
  const emitted = program.emit();
  const diagnostics = [...ts.getPreEmitDiagnostics(program), ...emitted.diagnostics].filter((d) => !EXPECTED_DIAGNOSTICS.has(d.code));
  if (diagnostics.length > 0 || emitted.emitSkipped) fail(diagnostics);
}

function fail(diagnostics: readonly ts.Diagnostic[]): never {
  const host: ts.FormatDiagnosticsHost = { getCanonicalFileName: (f) => f, getCurrentDirectory: () => root, getNewLine: () => '\n' };
  console.error(ts.formatDiagnosticsWithColorAndContext(diagnostics, host));
  console.error('build failed');
  process.exit(1);
}

const readJson = (file: string) => JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;

/**
 * A package keeps its workspace's layout, each .ts replaced by its .js and .d.ts, so paths the code
 * computes from import.meta.url (Drizzle migrations, the CLI's own package.json) hold unchanged.
 */
function stage(spec: PackageSpec, rootManifest: Record<string, unknown>): string {
  const out = join(staging, spec.as?.folder ?? spec.dir);
  const workspace = join(root, spec.dir);
  const folders = [...new Set(spec.sources.map((pattern) => pattern.split('/')[0] ?? ''))];
  for (const folder of folders) cpSync(join(emitDir, spec.dir, folder), join(out, folder), { recursive: true });
  for (const folder of spec.copied ?? []) cpSync(join(workspace, folder), join(out, folder), { recursive: true });
  // Files the code reads at run time (Drizzle migrations) and hand-written declarations.
  for (const pattern of spec.sources) {
    const folder = pattern.split('/**')[0] ?? '';
    for (const asset of globSync(`${folder}/**/*`, { cwd: workspace, withFileTypes: true })) {
      const path = join(asset.parentPath, asset.name);
      if (!asset.isFile() || (/\.c?ts$/.test(path) && !path.endsWith('.d.ts')) || excluded(path)) continue;
      const target = join(out, relative(workspace, path));
      mkdirSync(dirname(target), { recursive: true });
      copyFileSync(path, target);
    }
  }
  const manifest = readJson(join(workspace, 'package.json'));
  // The SDK's declarations name zod's types, so zod is its dependency too (at the version shared uses).
  const sharedDependencies = readJson(join(root, 'shared/package.json')).dependencies as Record<string, string>;
  const allDependencies: Record<string, string> = {
    ...sharedDependencies,
    ...(manifest.dependencies as Record<string, string>),
    '@hostadm/shared': String(manifest.version),
  };
  const dependencies = spec.as ? Object.fromEntries(spec.as.dependencies.map((name) => [name, allDependencies[name]])) : manifest.dependencies;
  const base = spec.subpathRoot === '.' ? './' : `./${spec.subpathRoot}/`;
  const conditions = (source: string) => ({ types: `${base}${source.replace(/\.ts$/, '.d.ts')}`, default: `${base}${source.replace(/\.ts$/, '.js')}` });
  const exports: Record<string, unknown> = {};
  for (const [subpath, source] of Object.entries(spec.entries)) exports[subpath] = conditions(source);
  // The specifiers the sources use between packages (`@hostadm/shared/protocol/limits.ts`), and the
  // same with .js for code written against the built package.
  exports['./*.ts'] = conditions('*.ts');
  exports['./*.js'] = conditions('*.ts');
  exports['./package.json'] = './package.json';
  const staged = {
    name: spec.as?.name ?? manifest.name,
    version: manifest.version,
    description: spec.description,
    license: rootManifest.license,
    type: 'module',
    engines: rootManifest.engines,
    ...(spec.bin ? { bin: spec.bin } : {}),
    exports,
    files: [...folders, ...(spec.copied ?? []), ...(spec.bin ? ['bin'] : []), 'README.md', 'LICENSE'],
    dependencies,
  };
  writeFileSync(join(out, 'package.json'), `${JSON.stringify(staged, null, 2)}\n`);
  if (spec.bin) for (const file of Object.values(spec.bin)) cpSync(join(workspace, file), join(out, file));
  const readme = [
    ...(spec.as ? [join(workspace, spec.as.folder, 'README.md')] : []),
    join(workspace, 'README.md'),
    join(workspace, 'cli/README.md'),
    join(root, 'README.md'),
  ].find(existsSync);
  if (readme) copyFileSync(readme, join(out, 'README.md'));
  copyFileSync(join(root, 'LICENSE'), join(out, 'LICENSE'));
  return out;
}

function pack(dir: string): string {
  const npm = process.env.npm_execpath;
  // npm's own JS when run through `npm run`, so the Node that runs this script runs npm too.
  const command = npm?.endsWith('.js') ? [process.execPath, npm] : ['npm'];
  const result = spawnSync(command[0] ?? 'npm', [...command.slice(1), 'pack', '--json', '--pack-destination', distRoot], { cwd: dir, encoding: 'utf8' });
  if (result.status !== 0) {
    console.error(result.stderr);
    throw new Error(`npm pack failed in ${dir}`);
  }
  const [info] = JSON.parse(result.stdout) as Array<{ filename: string; size: number; entryCount: number }>;
  if (!info) throw new Error(`npm pack printed no file in ${dir}`);
  console.log(`${relative(root, join(distRoot, info.filename))}  ${info.entryCount} files, ${(info.size / 1024).toFixed(0)} KiB`);
  return join(distRoot, info.filename);
}

// Only what this script writes is removed: --out may name a folder with other files in it.
for (const dir of [staging, emitDir]) rmSync(dir, { recursive: true, force: true });
ensureConsoleBuilt({ quiet: true });
compile();
const rootManifest = readJson(join(root, 'package.json'));
const staged = PACKAGES.map((p) => stage(p, rootManifest));
// The CLI's client commands run from a bundle (bundle-cli.ts says why and what stays out).
await bundleCli(root, join(staging, 'client'));
rmSync(emitDir, { recursive: true, force: true });
console.log(`built ${staged.map((d) => relative(root, d)).join(', ')}`);
if (process.argv.includes('--pack')) for (const dir of staged) pack(dir);
