/**
 * The call index a bundle carries (call-index.ts): scripts/bundle-cli.ts replaces this file's text
 * with the index computed from the contracts when the bundle is made. Run from the TypeScript sources
 * there is none: call-index.ts then computes a class's entry from its contract.
 */
import type { CallIndex } from './call-index.ts';

export function builtCallIndex(): CallIndex | null {
  return null;
}
