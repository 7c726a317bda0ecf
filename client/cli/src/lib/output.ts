/** Tables for people (cli-table3, borderless, loaded only when a table is printed), one JSON document for scripts. */

export function printJson(value: unknown, write: (text: string) => void = (text) => process.stdout.write(text)): void {
  write(`${JSON.stringify(value, null, 2)}\n`);
}

/** A borderless table on stdout: a header row, then one row per record. `maxWidth` caps a column. */
export async function printTable(head: string[], rows: string[][], options: { maxWidths?: Record<number, number> } = {}): Promise<void> {
  const { default: Table } = await import('cli-table3');
  const clip = (text: string, col: number) => {
    const max = options.maxWidths?.[col];
    return max !== undefined && text.length > max ? `${text.slice(0, Math.max(1, max - 1))}…` : text;
  };
  const table = new Table({
    head,
    chars: {
      top: '',
      'top-mid': '',
      'top-left': '',
      'top-right': '',
      bottom: '',
      'bottom-mid': '',
      'bottom-left': '',
      'bottom-right': '',
      left: '',
      'left-mid': '',
      mid: '',
      'mid-mid': '',
      right: '',
      'right-mid': '',
      middle: '  ',
    },
    style: { head: [], border: [], 'padding-left': 0, 'padding-right': 0, compact: true },
  });
  for (const row of rows) table.push(row.map((cell, i) => clip(cell, i)));
  // cli-table3 pads the last column too; trailing spaces help nobody.
  const text = table
    .toString()
    .split('\n')
    .map((l) => l.trimEnd())
    .join('\n');
  process.stdout.write(`${text}\n`);
}

/** Width left for a last column on a terminal (none when not a terminal). */
export function terminalWidth(): number | undefined {
  return process.stdout.isTTY ? process.stdout.columns : undefined;
}
