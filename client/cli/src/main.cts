/**
 * `hostadm` entry. `--version` (and `-V`) alone is answered here, before commander and the command
 * definitions load. This one file is CommonJS because Node starts a CommonJS entry without its ES
 * module loader: about 5 ms of CPU less per command (test/bench/cli-start), which is most of what
 * `--version` costs beyond starting Node at all. Everything else is ES modules, from program.ts on.
 * Whether the Node that runs it is new enough is checked here too, not by the bin wrapper: asking
 * `node --version` there costs every command a second start of Node (about 3 ms of CPU).
 */
/**
 * The agent's and the bridge's stores use node:sqlite with rows as arrays (22.16); the CLI's module
 * hook needs registerHooks (22.15). Checked before anything loads, so any Node that can parse this
 * file says clearly what it lacks.
 */
const [nodeMajor = 0, nodeMinor = 0] = process.versions.node.split('.').map(Number);
if (nodeMajor < 22 || (nodeMajor === 22 && nodeMinor < 16)) {
  process.stderr.write(
    `hostadm: Node.js ${process.version} at ${process.execPath} is too old; hostadm needs 22.16 or later (the agent's and the bridge's stores use node:sqlite as Node 22.16 and later provide it)\n`,
  );
  process.exit(1);
}

const { readFileSync } = require('node:fs') as typeof import('node:fs');
const { registerHooks } = require('node:module') as typeof import('node:module');
const { join } = require('node:path') as typeof import('node:path');

function packageVersion(): string {
  try {
    return (JSON.parse(readFileSync(join(__dirname, '../../package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

/**
 * Two module resolutions the CLI changes, for start-up time (test/bench/cli-start, bridged-call):
 * - zod's index re-exports every one of its 60-odd message locales, and a command that validates
 *   (every call does) would load them all: about 16 ms of CPU per command on our machines. hostadm
 *   writes its own messages (shared/src/protocol/plain-issues.ts) and zod itself only ever uses
 *   English, so the CLI resolves that index to English alone.
 * - `ws` loads node:http, node:https, node:tls and node:zlib, and commander node:child_process, when
 *   they load, although the SDK's Node client opens its connections without node:http
 *   (client/sdk/src/node-websocket.ts), a ws:// connection never uses https or tls, zlib only if
 *   permessage-deflate is agreed (hostadm's servers do not agree to it) and hostadm has no executable
 *   subcommands for the last: about 30 ms of CPU per command together. Those imports get a stand-in
 *   that loads the real module the first time one of its members is read (a server, ws's own client,
 *   a wss:// connection, a spawn).
 * The agent and the bridge, when this CLI runs them, get the same stand-ins, which cost nothing once
 * loaded (their servers load node:http themselves).
 */
const DEFERRED_BUILTINS: Record<string, RegExp> = {
  http: /\/node_modules\/ws\/lib\//,
  https: /\/node_modules\/ws\/lib\//,
  tls: /\/node_modules\/ws\/lib\//,
  zlib: /\/node_modules\/ws\/lib\//,
  child_process: /\/node_modules\/commander\/lib\//,
};
const DEFERRED_SCHEME = 'hostadm-deferred-builtin:';
/**
 * Members a stand-in answers as absent without loading the module: ws's buffer-util reads node:http's
 * native mask as it loads (`websocketMask`, which no Node release has yet: not 24.21), so ws masks as
 * it does on every Node today (in JavaScript, or with bufferutil where installed).
 */
const ABSENT_MEMBERS: Record<string, string[]> = { http: ['websocketMask', 'websocketUnmask'] };

function quickerModuleResolution(): void {
  registerHooks({
    resolve(specifier, context, nextResolve) {
      const builtin = specifier.startsWith('node:') ? specifier.slice(5) : specifier;
      const importers = Object.hasOwn(DEFERRED_BUILTINS, builtin) ? DEFERRED_BUILTINS[builtin] : undefined;
      if (importers?.test(context.parentURL ?? '')) return { url: `${DEFERRED_SCHEME}${builtin}`, format: 'commonjs', shortCircuit: true };
      const resolved = nextResolve(specifier, context);
      if (!resolved.url.endsWith('/zod/v4/locales/index.js')) return resolved;
      const english = new URL('./en.js', resolved.url).href;
      return { url: `data:text/javascript,export { default as en } from ${JSON.stringify(english)};`, shortCircuit: true };
    },
    load(url, context, nextLoad) {
      if (!url.startsWith(DEFERRED_SCHEME)) return nextLoad(url, context);
      const name = url.slice(DEFERRED_SCHEME.length);
      const builtin = JSON.stringify(`node:${name}`);
      const absent = Object.hasOwn(ABSENT_MEMBERS, name) ? `${JSON.stringify(ABSENT_MEMBERS[name])}.includes(member) ? undefined : ` : '';
      return {
        format: 'commonjs',
        source: `module.exports = new Proxy({}, { get: (_, member) => ${absent}process.getBuiltinModule(${builtin})[member] });`,
        shortCircuit: true,
      };
    },
  });
}

interface ControlClient {
  callThroughSession(callArgv: string[], ownProcess: () => void): void;
}

interface CallBundleLoader {
  runCallBundle(bundle: string, argv: readonly string[]): boolean;
  freshRepositoryBundle(root: string): string | undefined;
}

function runProgram(): void {
  quickerModuleResolution();
  import('./program.ts').catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}

/**
 * `hostadm call` runs from one CommonJS bundle (scripts/bundle-cli.ts) with a code cache of its own
 * (lib/call-bundle.cts): no ES module loader, no module hook (the bundle has the same resolutions built
 * in), one file. The npm package ships it (`call.cjs` beside this file); in a checkout `npm ci` makes
 * it (scripts/build-call-bundle.ts) and it is used only while every file it was made from is unchanged,
 * else the call runs from the TypeScript sources through program.ts, as every other command does.
 */
function runCall(): void {
  const packaged = __filename.endsWith('.cjs');
  const loader = require(join(__dirname, 'lib', packaged ? 'call-bundle.cjs' : 'call-bundle.cts')) as CallBundleLoader;
  const bundle = packaged ? join(__dirname, 'call.cjs') : loader.freshRepositoryBundle(join(__dirname, '../../..'));
  if (bundle === undefined || !loader.runCallBundle(bundle, process.argv)) runProgram();
}

const args = process.argv.slice(2);
if (args.length === 1 && (args[0] === '--version' || args[0] === '-V')) {
  process.stdout.write(`${packageVersion()}\n`);
} else if (args[0] === 'call' && process.env.HOSTADM_PERSIST !== undefined) {
  // A persisted session (lib/control-session.ts) answers before commander, zod and the SDK load.
  // The sources in a checkout, compiled JavaScript in the npm package: the same file either way.
  const controlClient = join(__dirname, 'lib', __filename.endsWith('.cts') ? 'control-client.cts' : 'control-client.cjs');
  (require(controlClient) as ControlClient).callThroughSession(args.slice(1), runCall);
} else if (args[0] === 'call') {
  runCall();
} else {
  runProgram();
}
