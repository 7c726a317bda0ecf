/**
 * A small bounded cache of results derived from public key text (fingerprints, md5_keys): every
 * bridged opening needs them again for the same keys, and each costs a digest or a DER parse.
 */
export function memoized<T>(compute: (input: string) => Promise<T>, max = 32): (input: string) => Promise<T> {
  const kept = new Map<string, Promise<T>>();
  return (input) => {
    const hit = kept.get(input);
    if (hit) return hit;
    const result = compute(input);
    // A failure is not kept: the next call tries again (and reports its own error).
    result.catch(() => kept.delete(input));
    if (kept.size >= max) kept.delete(kept.keys().next().value!);
    kept.set(input, result);
    return result;
  };
}
