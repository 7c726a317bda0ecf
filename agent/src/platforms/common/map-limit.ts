/**
 * Runs `probe` over `items` with at most `limit` at once, keeping the order of `items` in the result.
 * Status probes are one process each; a host has a hundred or more, and running them one after the
 * other makes `list_services` take seconds.
 */
export async function mapLimit<T, R>(items: readonly T[], limit: number, probe: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      results[index] = await probe(items[index] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
