/**
 * Runs a test suite once per engine of primitives.ts (and of aead.ts, which follows the same switch):
 * node:crypto, then WebCrypto as browsers and Workers run it. Test support only.
 */
import assert from 'node:assert/strict';
import { after, before, describe } from 'node:test';
import { primitives, type EngineName } from './primitives.ts';

export const ENGINES: readonly EngineName[] = ['node', 'webcrypto'];

export const engineLabel = (engine: EngineName) => (engine === 'node' ? 'node:crypto' : 'WebCrypto');

/** Selects `engine` for what runs until the returned function restores the previous choice. */
export function selectEngine(engine: EngineName): () => void {
  const saved = process.env.HOSTADM_HSC1_ENGINE;
  if (engine === 'webcrypto') process.env.HOSTADM_HSC1_ENGINE = 'webcrypto';
  else delete process.env.HOSTADM_HSC1_ENGINE;
  assert.equal(primitives().engine, engine);
  return () => {
    if (saved === undefined) delete process.env.HOSTADM_HSC1_ENGINE;
    else process.env.HOSTADM_HSC1_ENGINE = saved;
  };
}

/** `describe(name)` once per engine; `setUp` runs first under that engine (keys made there are its own). */
export function describeOnEachEngine(name: string, body: (engine: EngineName) => void, setUp?: () => Promise<void>): void {
  for (const engine of ENGINES) {
    describe(`${name} (${engineLabel(engine)})`, () => {
      let restore = () => {};
      before(async () => {
        restore = selectEngine(engine);
        await setUp?.();
      });
      after(() => restore());
      body(engine);
    });
  }
}
