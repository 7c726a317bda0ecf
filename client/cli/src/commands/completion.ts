/**
 * `hostadm completion bash|zsh|fish`: prints the shell's completion script; `hostadm completion
 * markdown` prints the command reference (docs/cli.md). Both are generated from this program's own
 * commands and from the contracts, so a new class, action, argument or option needs no edit here.
 */
import { Argument, Command } from 'commander';

export function completionCommand(program: Command): Command {
  return (
    new Command('completion')
      // The program's exit codes (a usage error is 2) and error output, as for the commands it defines itself.
      .copyInheritedSettings(program)
      .description('print the shell completion script (bash, zsh or fish), or the command reference (markdown)')
      .addArgument(new Argument('<shell>', 'bash, zsh, fish, or markdown for docs/cli.md').choices(['bash', 'zsh', 'fish', 'markdown']))
      .addHelpText(
        'after',
        `
Load it:  bash  source <(hostadm completion bash)     (or save it in ~/.local/share/bash-completion/completions/hostadm)
          zsh   source <(hostadm completion zsh)      (after compinit; or save it as _hostadm in a directory of $fpath)
          fish  hostadm completion fish | source      (or save it as ~/.config/fish/completions/hostadm.fish)`,
      )
      .action(async (shell: 'bash' | 'zsh' | 'fish' | 'markdown') => {
        const { completionModel } = await import('../lib/completion-model.ts');
        const model = await completionModel(program);
        if (shell === 'markdown') {
          const { cliMarkdown } = await import('../lib/cli-docs.ts');
          process.stdout.write(cliMarkdown(model));
          return;
        }
        const { completionScript } = await import('../lib/completion-scripts.ts');
        process.stdout.write(completionScript(shell, model));
      })
  );
}
