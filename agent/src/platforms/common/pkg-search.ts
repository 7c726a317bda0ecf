/**
 * How `pkg_search` ranks, the same on every platform (the original's order, case-insensitive):
 * exact name or origin ending in `/<term>`; name prefix; name substring; comment with every word;
 * comment with any word; description with every word. A weaker tier is consulted only while fewer than
 * TIER_ENOUGH results were found (the original stopped at 60), and at most MAX_RESULTS are returned.
 * A result whose name, origin or comment contains an excluded phrase is dropped.
 */
import type { SearchCandidate } from '../ports/pkg.ts';

export const TIER_ENOUGH = 60;
export const MAX_RESULTS = 200;

export function rankSearch(candidates: readonly SearchCandidate[], term: string, excludes: readonly string[] = []): string[] {
  const needle = term.toLowerCase().trim();
  const words = needle.split(/ +/).filter(Boolean);
  const excluded = excludes.map((e) => e.toLowerCase());
  const kept = candidates.filter(
    (c) => !excluded.some((e) => c.name.toLowerCase().includes(e) || c.origin.toLowerCase().includes(e) || c.comment.toLowerCase().includes(e)),
  );
  const tiers: Array<(c: SearchCandidate) => boolean> = [
    (c) => c.name.toLowerCase() === needle || c.origin.toLowerCase().endsWith(`/${needle}`),
    (c) => c.name.toLowerCase().startsWith(needle),
    (c) => c.name.toLowerCase().includes(needle),
    (c) => words.every((w) => c.comment.toLowerCase().includes(w)),
    (c) => words.some((w) => c.comment.toLowerCase().includes(w)),
    (c) => words.every((w) => c.desc.toLowerCase().includes(w)),
  ];
  const order: string[] = [];
  const seen = new Set<string>();
  for (const tier of tiers) {
    if (order.length >= TIER_ENOUGH) break;
    const hits = kept.filter((c) => !seen.has(c.origin) && tier(c)).sort((a, b) => a.name.localeCompare(b.name) || a.origin.localeCompare(b.origin));
    for (const hit of hits) {
      seen.add(hit.origin);
      order.push(hit.origin);
    }
  }
  return order.slice(0, MAX_RESULTS);
}
