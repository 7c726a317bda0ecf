/**
 * The installed CLI's client commands as a bundle (esbuild, called by build.ts): `cli/src/program.js`
 * in the staged client package becomes one ES module with its code split into `cli/src/bundle/*.js`,
 * one chunk per lazily loaded command and the shared code between them, so `hostadm call` loads
 * about 40 files instead of about 150 (each file is resolved, read, compiled and linked on every run:
 * a fifth of the CPU a bridged call costs; test/bench/bridged-call.bench.ts, its npm package row).
 *
 * What stays out of the bundle, loaded file by file from the installed packages as before:
 * - the commands that run a server (`agent`, `agent keys`, `bridge`, `up`) and what they import: the
 *   agent, the bridge and the console packages and pino. A bundle would give them a second copy of
 *   zod and the shared code beside the agent's own, in the processes that stay up.
 * ws's optional native speed-ups (bufferutil, utf-8-validate) are left out (NATIVE_SPEEDUPS says why).
 * The same two module resolutions as main.cts's hook apply here, at build time: zod's locale index is
 * English alone, and the node:http, node:https, node:tls, node:zlib and node:child_process imports of
 * ws and commander get a stand-in that loads the module on first use.
 */
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build, type Plugin } from 'esbuild';
import type { CallIndex } from '../client/cli/src/lib/call-index.ts';

/** Client commands that run a server: imported by their installed path (`@hostadm/client/cli/src/commands/<name>.js`). */
const SERVER_COMMANDS = new Set(['agent', 'agent-keys', 'bridge', 'bridge-admin', 'up']);
/** Packages that only those commands use. */
const EXTERNAL_PACKAGES = /^(@hostadm\/(agent|bridge|console)(\/|$)|pino(\/|$))/;
/**
 * ws's optional native speed-ups, which a client command does without: loading bufferutil (node-gyp-build
 * searching for the addon, then dlopen) costs a bridged call ~2.5 ms of CPU, and masks a few hundred
 * bytes per message no faster than ws's JavaScript does. ws loads each in a try/catch and falls back
 * when it throws. The commands that run a server load ws from the installed packages, with them.
 */
const NATIVE_SPEEDUPS = /^(bufferutil|utf-8-validate)$/;
/** As in main.cts: built-in modules imported by ws and commander that a client command rarely uses. */
const DEFERRED_BUILTINS: Record<string, RegExp> = {
  http: /[\\/]node_modules[\\/]ws[\\/]lib[\\/]/,
  https: /[\\/]node_modules[\\/]ws[\\/]lib[\\/]/,
  tls: /[\\/]node_modules[\\/]ws[\\/]lib[\\/]/,
  zlib: /[\\/]node_modules[\\/]ws[\\/]lib[\\/]/,
  child_process: /[\\/]node_modules[\\/]commander[\\/]lib[\\/]/,
};
/** As in main.cts: ws's buffer-util reads node:http's (future) native mask as it loads; the stand-in has none. */
const ABSENT_MEMBERS: Record<string, string[]> = { http: ['websocketMask', 'websocketUnmask'] };

/**
 * `hostadm call`'s call index (client/cli/src/lib/call-index.ts), computed from the contracts of the
 * checkout at `root` by the function the sources use at run time. Node imports each module once per
 * process: a contract edited after this ran is seen by the next build process, as every build is.
 */
export async function callIndexFromContracts(root: string): Promise<CallIndex> {
  const url = (path: string) => pathToFileURL(join(root, path)).href;
  const registry = (await import(url('shared/src/api/index.ts'))) as typeof import('../shared/src/api/index.ts');
  const { callIndexOf } = (await import(url('client/cli/src/lib/call-index.ts'))) as typeof import('../client/cli/src/lib/call-index.ts');
  return callIndexOf({ admin: registry.adminClasses, rpc: registry.rpcClasses });
}

/**
 * Files the call index is read from that the bundle does not take in itself (the contract files are
 * in it: contracts.ts loads each one), so a class added to the registry makes a repository bundle stale.
 */
const CALL_INDEX_INPUTS = ['shared/src/api/index.ts'];

function cliResolution(version: string, callIndex: CallIndex): Plugin {
  return {
    name: 'hostadm-cli',
    setup(b) {
      b.onResolve({ filter: /^\.\.?\/.*commands\/[a-z-]+\.ts$/ }, (args) => {
        const name = /([a-z-]+)\.ts$/.exec(args.path)?.[1] ?? '';
        if (!SERVER_COMMANDS.has(name) || !args.resolveDir.replaceAll('\\', '/').includes('/cli/src')) return undefined;
        return { path: `@hostadm/client/cli/src/commands/${name}.js`, external: true };
      });
      b.onResolve({ filter: EXTERNAL_PACKAGES }, (args) => ({ path: args.path, external: true }));
      b.onResolve({ filter: NATIVE_SPEEDUPS }, (args) => ({ path: args.path, namespace: 'not-bundled' }));
      b.onLoad({ filter: /.*/, namespace: 'not-bundled' }, (args) => ({
        contents: `throw new Error(${JSON.stringify(`${args.path} is left out of the hostadm CLI bundle (ws works without it)`)});`,
        loader: 'js',
      }));
      b.onResolve({ filter: /^(node:)?(https?|tls|zlib|child_process)$/ }, (args) => {
        const builtin = args.path.replace(/^node:/, '');
        return DEFERRED_BUILTINS[builtin]?.test(args.importer) ? { path: builtin, namespace: 'deferred-builtin' } : undefined;
      });
      b.onLoad({ filter: /.*/, namespace: 'deferred-builtin' }, (args) => {
        const absent = Object.hasOwn(ABSENT_MEMBERS, args.path) ? `${JSON.stringify(ABSENT_MEMBERS[args.path])}.includes(member) ? undefined : ` : '';
        return {
          contents: `module.exports = new Proxy({}, { get: (_, member) => ${absent}process.getBuiltinModule(${JSON.stringify(`node:${args.path}`)})[member] });`,
          loader: 'js',
        };
      });
      b.onResolve({ filter: /\/locales\/index\.js$/ }, (args) =>
        /[\\/]zod[\\/]v4[\\/]/.test(args.importer) ? { path: 'en', namespace: 'zod-english', pluginData: args.resolveDir } : undefined,
      );
      b.onLoad({ filter: /.*/, namespace: 'zod-english' }, (args) => ({
        contents: `export { default as en } from '../locales/en.js';`,
        resolveDir: args.pluginData as string,
        loader: 'js',
      }));
      // lib/version.ts reads package.json relative to its own file, which a bundle moves: the version is built in.
      b.onLoad({ filter: /[\\/]cli[\\/]src[\\/]lib[\\/]version\.ts$/ }, () => ({
        contents: `export function packageVersion() { return ${JSON.stringify(version)}; }`,
        loader: 'js',
      }));
      // The call index, built in: a call without arguments then needs neither zod nor its class's contract.
      b.onLoad({ filter: /[\\/]cli[\\/]src[\\/]lib[\\/]call-index-built\.ts$/ }, () => ({
        contents: `const index = ${JSON.stringify(callIndex)};\nexport function builtCallIndex() { return index; }`,
        loader: 'js',
      }));
    },
  };
}

/** Writes the bundle over the staged client package's compiled `cli/src/program.js`. */
export async function bundleCli(root: string, stagedClient: string): Promise<void> {
  const version = (JSON.parse(readFileSync(join(root, 'client/package.json'), 'utf8')) as { version: string }).version;
  const callIndex = await callIndexFromContracts(root);
  const result = await build({
    entryPoints: { program: join(root, 'client/cli/src/program.ts') },
    outdir: join(stagedClient, 'cli/src'),
    chunkNames: 'bundle/[name]-[hash]',
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node22.16',
    allowOverwrite: true,
    // CommonJS dependencies (ws, node-forge, cli-table3) call require() for built-in modules.
    banner: { js: "import { createRequire as __hostadmCreateRequire } from 'node:module'; const require = __hostadmCreateRequire(import.meta.url);" },
    plugins: [cliResolution(version, callIndex)],
    logLevel: 'warning',
    legalComments: 'none',
  });
  if (result.errors.length > 0) throw new Error('bundling the CLI failed');
  await bundleCall(root, stagedClient, version);
}

/**
 * `hostadm call` by itself, as one CommonJS file (`cli/src/call.cjs`) that main.cjs runs through
 * lib/call-bundle.cts: no ES module loader, one file to read, and a V8 code cache made after the call
 * ran, which the content hash on its first line names. ASCII only (comments dropped, other characters
 * escaped), so it is read as latin1 and V8 keeps it as a one-byte string: no UTF-8 decoding of ~1 MB.
 * zod is its companion beside it (`cli/src/zod-<hash>.cjs`, see buildCallBundle).
 */
async function bundleCall(root: string, stagedClient: string, version: string): Promise<void> {
  const { code, companion } = await buildCallBundle(root, version);
  writeFileSync(join(stagedClient, 'cli/src/call.cjs'), code);
  writeFileSync(join(stagedClient, 'cli/src', companion.name), companion.code);
}

/**
 * The call bundle's companion: zod, which only the argument checks, the class contracts and help
 * use. A call without arguments never initialises it, but inside the bundle its ~300 KB would still
 * be read and its share of the bundle's V8 code cache deserialised on every call (the cache's size
 * follows the functions in the script, not the ones that ran): ~18 M instructions of ~236
 * (callgrind). So the bundle `require`s `./zod-<hash>.cjs` in the lazy inits of the modules that
 * import zod, and lib/call-bundle.cts serves that specifier with this file, compiled with a code
 * cache of its own. It exports what the sources import from zod, `{ z }`, as a plain object of the
 * members of zod's `z` the bundle reads (ZOD_MEMBERS; checkZodImports fails the build on any other),
 * not the whole namespace: esbuild then leaves out what of zod nothing reaches (the JSON Schema
 * generator, coercion, codecs, the types no contract uses: bigint, date, file, promise, template
 * literals, ...), half its bytes and over half its initialisation, ~22 M instructions of a call with
 * arguments (callgrind).
 */
const ZOD_COMPANION_EXPORTS = ['z'];

/** What the call bundle reads of `z` (`z.object(...)`, ...); a contract that uses another zod function adds it here. */
const ZOD_MEMBERS = [
  'array',
  'boolean',
  'discriminatedUnion',
  'enum',
  'literal',
  'number',
  'object',
  'record',
  'strictObject',
  'string',
  'tuple',
  'union',
  'unknown',
];

/** The companion's entry: `z` made of ZOD_MEMBERS alone (imported under other names: `enum` is a reserved word). */
const ZOD_COMPANION_ENTRY = `import { ${ZOD_MEMBERS.map((m) => `${m} as zod_${m}`).join(', ')} } from 'zod';
export const z = { ${ZOD_MEMBERS.map((m) => `${m}: zod_${m}`).join(', ')} };`;

/**
 * Fails the build unless every import of zod in the call bundle is a plain binding of the companion
 * (`import_zod=require("./zod-<hash>.cjs")`, as esbuild writes named imports; a default or namespace
 * import would add __toESM), every member read of one is a name the companion exports, and `z` is
 * only ever read for one of ZOD_MEMBERS (`import_zod.z.object`), never passed on whole.
 */
function checkZodImports(text: string, specifier: string, exported: readonly string[]): void {
  const requires = text.split(`require(${JSON.stringify(specifier)})`).length - 1;
  const bindings = text.split(new RegExp(`\\bimport_zod\\d*=require\\(${JSON.stringify(specifier).replaceAll('.', '\\.')}\\)`)).length - 1;
  const missing = [...new Set([...text.matchAll(/\bimport_zod\d*\.([\w$]+)/g)].map((m) => m[1] ?? ''))].filter((name) => !exported.includes(name));
  const zReads = [...text.matchAll(/\bimport_zod\d*\.z\b(\.[\w$]+)?/g)].map((m) => m[1]?.slice(1) ?? '(z itself)');
  const missingMembers = [...new Set(zReads)].filter((name) => !ZOD_MEMBERS.includes(name));
  if (requires === 0 || bindings !== requires || missing.length > 0 || missingMembers.length > 0) {
    throw new Error(
      `the call bundle imports from zod what its companion does not export (${requires} requires, ${bindings} plain bindings, missing: ${[...missing, ...missingMembers.map((m) => `z.${m}`)].join(', ') || 'none'}): see ZOD_COMPANION_EXPORTS and ZOD_MEMBERS in scripts/bundle-cli.ts`,
    );
  }
}

function zodCompanion(specifier: string): Plugin {
  return {
    name: 'hostadm-call-zod-companion',
    setup(b) {
      b.onResolve({ filter: /^zod(\/|$)/ }, (args) => {
        if (/[\\/]node_modules[\\/]zod[\\/]/.test(args.importer)) return undefined;
        if (args.path !== 'zod')
          return { errors: [{ text: `${args.path}: only \`zod\` itself is in the call bundle's zod companion (scripts/bundle-cli.ts)` }] };
        return { path: specifier, external: true };
      });
    },
  };
}

/** esbuild's output as ASCII bytes behind a `/* <kind> <content hash> *\/` line (lib/call-bundle.cts reads it as latin1), and that hash. */
function hashedAscii(text: string, kind: string): { code: Buffer; id: string } {
  // esbuild escapes strings but leaves regular expression literals as written (`[’]`): \uXXXX means the
  // same there, in strings and in identifiers (an astral character as its surrogate pair, as /u reads it).
  const code = Buffer.from(
    text.replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`),
    'latin1',
  );
  if (code.some((byte) => byte > 0x7f)) throw new Error(`the ${kind} is not ASCII: lib/call-bundle.cts reads it as latin1`);
  const id = createHash('sha256').update(code).digest('hex').slice(0, 32);
  return { code: Buffer.concat([Buffer.from(`/* ${kind} ${id} */\n`), code]), id };
}

/**
 * The call bundle's bytes (header line included), its zod companion (file name and bytes) and the
 * files both were made from, relative to `root` (esbuild's metafiles: sources, contracts and the
 * third-party files they took in). The repository layout keeps the same files with that list
 * (build-call-bundle.ts); in both layouts the companion lies beside the bundle.
 */
export async function buildCallBundle(root: string, version: string): Promise<{ code: Buffer; companion: { name: string; code: Buffer }; inputs: string[] }> {
  const callIndex = await callIndexFromContracts(root);
  const common = {
    absWorkingDir: root,
    bundle: true,
    format: 'cjs',
    platform: 'node',
    target: 'node22.16',
    charset: 'ascii',
    minifyWhitespace: true,
    write: false,
    metafile: true,
    logLevel: 'warning',
    legalComments: 'none',
  } as const;
  const zod = await build({
    ...common,
    stdin: { contents: ZOD_COMPANION_ENTRY, resolveDir: root, sourcefile: 'zod-companion.js', loader: 'js' },
    outfile: join(root, 'zod.cjs'),
    plugins: [cliResolution(version, callIndex)],
  });
  const zodText = zod.outputFiles[0]?.text;
  if (zod.errors.length > 0 || zodText === undefined) throw new Error("bundling hostadm call's zod failed");
  const companion = hashedAscii(zodText, 'hostadm-call-zod');
  const companionName = `zod-${companion.id}.cjs`;
  const result = await build({
    ...common,
    entryPoints: [join(root, 'client/cli/src/call-program.ts')],
    outfile: join(root, 'call.cjs'),
    plugins: [zodCompanion(`./${companionName}`), cliResolution(version, callIndex)],
  });
  const text = result.outputFiles[0]?.text;
  if (result.errors.length > 0 || text === undefined) throw new Error('bundling hostadm call failed');
  checkZodImports(text, `./${companionName}`, ZOD_COMPANION_EXPORTS);
  // Files only: the plugin's namespaces (`deferred-builtin:https`, `zod-english:en`) and the companion's
  // stdin entry are made here, from this file.
  const inputs = [...Object.keys(result.metafile.inputs), ...Object.keys(zod.metafile.inputs)].filter((path) => !/^[a-z-]+:|^zod-companion\.js$/.test(path));
  return {
    code: hashedAscii(text, 'hostadm-call-bundle').code,
    companion: { name: companionName, code: companion.code },
    inputs: [...new Set([...inputs, ...CALL_INDEX_INPUTS])],
  };
}
