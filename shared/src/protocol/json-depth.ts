/**
 * A linear scan for JSON nesting deeper than `max`, run before `JSON.parse` on frames from peers:
 * nesting costs parsers and validators far more than its bytes (a 3 MB nested frame once took the
 * bridge 1.27 s and 1 GB). Brackets inside strings do not count; the text need not be valid JSON.
 */
export function jsonNestingExceeds(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}
