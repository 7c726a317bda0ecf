/**
 * `hostadm` entry. `--version` (and `-V`) alone is answered here, before commander and the command
 * definitions load, so it costs little more than starting Node; everything else goes to program.ts.
 */
import { registerHooks } from 'node:module';
import { packageVersion } from './lib/version.ts';

/**
 * zod's index re-exports every one of its 60-odd message locales, and a command that validates (every
 * call does) would load them all: about 16 ms of CPU per command on our machines (test/bench/cli-start).
 * hostadm writes its own messages (shared/src/protocol/plain-issues.ts) and zod itself only ever uses
 * English, so the CLI resolves that index to English alone. The agent and the bridge load zod once per
 * process and keep the full index.
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
  await import('./program.ts');
}
