/**
 * `hostadm` entry. `--version` (and `-V`) alone is answered here, before commander and the command
 * definitions load. This one file is CommonJS because Node starts a CommonJS entry without its ES
 * module loader: about 5 ms of CPU less per command (test/bench/cli-start), which is most of what
 * `--version` costs beyond starting Node at all. Everything else is ES modules, from program.ts on.
 */
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
 * zod's index re-exports every one of its 60-odd message locales, and a command that validates (every
 * call does) would load them all: about 16 ms of CPU per command on our machines. hostadm writes its
 * own messages (shared/src/protocol/plain-issues.ts) and zod itself only ever uses English, so the CLI
 * resolves that index to English alone. The agent and the bridge load zod once per process and keep
 * the full index.
 */
function englishOnlyZodLocales(): void {
  registerHooks({
    resolve(specifier, context, nextResolve) {
      const resolved = nextResolve(specifier, context);
      if (!resolved.url.endsWith('/zod/v4/locales/index.js')) return resolved;
      const english = new URL('./en.js', resolved.url).href;
      return { url: `data:text/javascript,export { default as en } from ${JSON.stringify(english)};`, shortCircuit: true };
    },
  });
}

const args = process.argv.slice(2);
if (args.length === 1 && (args[0] === '--version' || args[0] === '-V')) {
  process.stdout.write(`${packageVersion()}\n`);
} else {
  englishOnlyZodLocales();
  import('./program.ts').catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
