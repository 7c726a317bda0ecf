/**
 * "Did you mean": the known names closest to a mistyped one. Edit distance (Damerau: a swap of two
 * neighbours counts once), small enough to write here rather than add a dependency for.
 */

/** Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps. */
export function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[][] = Array.from({ length: rows }, (_, i) => Array.from({ length: cols }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, d[i - 2]![j - 2]! + 1);
      d[i]![j] = best;
    }
  }
  return d[a.length]![b.length]!;
}

/**
 * The candidates within a small distance of `word` (a third of its length, at least 1, at most 3),
 * nearest first, at most `max`; a candidate that starts with the word counts too (`sys` → systemmanager).
 */
export function suggest(word: string, candidates: readonly string[], max = 3): string[] {
  const lower = word.toLowerCase();
  const limit = Math.min(3, Math.max(1, Math.floor(lower.length / 3)));
  return [...new Set(candidates)]
    .map((c) => ({ c, d: c.toLowerCase().startsWith(lower) && lower.length >= 3 ? 0.5 : editDistance(lower, c.toLowerCase()) }))
    .filter(({ d }) => d <= limit)
    .sort((x, y) => x.d - y.d || x.c.localeCompare(y.c))
    .slice(0, max)
    .map(({ c }) => c);
}

/** ` (did you mean a or b?)`, or '' when nothing is close. */
export function didYouMean(word: string, candidates: readonly string[]): string {
  const near = suggest(word, candidates);
  if (near.length === 0) return '';
  const list = near.length === 1 ? near[0] : `${near.slice(0, -1).join(', ')} or ${near.at(-1)}`;
  return ` (did you mean ${list}?)`;
}
