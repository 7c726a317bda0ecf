import { isatty } from 'node:tty';

/**
 * Whether a prompt can be shown and answered: standard input and standard error are terminals. Asked
 * of the file descriptors rather than `process.stdin.isTTY`: reading `process.stdin` makes the stream,
 * and for a file or /dev/null (a script's stdin) that loads fs streams, fs/promises and readline, ten
 * modules, ~2 ms of CPU a non-interactive `hostadm call` would spend for nothing.
 */
export function canPrompt(): boolean {
  return isatty(0) && isatty(2);
}

/** A password prompt on the terminal: nothing is echoed; Ctrl-C cancels. */
export function promptHidden(question: string): Promise<string> {
  const input = process.stdin;
  const output = process.stderr;
  return new Promise((resolve, reject) => {
    if (!input.isTTY) {
      reject(new Error('cannot prompt: standard input is not a terminal'));
      return;
    }
    output.write(question);
    input.setRawMode(true);
    input.resume();
    input.setEncoding('utf8');
    let value = '';
    const done = (err?: Error) => {
      input.setRawMode(false);
      input.pause();
      input.off('data', onData);
      output.write('\n');
      if (err) reject(err);
      else resolve(value);
    };
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n' || ch === '\u0004') return done();
        if (ch === '\u0003') return done(new Error('cancelled'));
        if (ch === '\u007f' || ch === '\b') value = value.slice(0, -1);
        else if (ch >= ' ') value += ch;
      }
    };
    input.on('data', onData);
  });
}
