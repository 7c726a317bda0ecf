/**
 * Splits a dispatcher command string into argv without a shell. The rules (docs/protocol.md):
 * - unquoted whitespace separates words;
 * - '...' is taken literally; "..." is literal except `\"` and `\\`;
 * - outside quotes, a backslash makes the next character literal;
 * - nothing else is special: no variables, globs, pipes, redirections, `;` or `&&`; such characters
 *   are plain argument text, so `ls | wc` runs `ls` with the arguments `|` and `wc`.
 */
export class CommandLineError extends Error {}

export function splitCommandLine(line: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let quote: "'" | '"' | null = null;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i] as string;
    if (quote === "'") {
      if (ch === "'") quote = null;
      else word += ch;
      continue;
    }
    if (quote === '"') {
      if (ch === '"') quote = null;
      else if (ch === '\\' && (line[i + 1] === '"' || line[i + 1] === '\\')) word += line[++i];
      else word += ch;
      continue;
    }
    if (ch === "'" || ch === '"') {
      quote = ch;
      inWord = true;
    } else if (ch === '\\') {
      if (i + 1 >= line.length) throw new CommandLineError('a trailing backslash escapes nothing');
      word += line[++i];
      inWord = true;
    } else if (/\s/.test(ch)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else {
      word += ch;
      inWord = true;
    }
  }
  if (quote) throw new CommandLineError(`unterminated ${quote === '"' ? 'double' : 'single'} quote`);
  if (inWord) words.push(word);
  if (words.length === 0) throw new CommandLineError('the command is empty');
  return words;
}
