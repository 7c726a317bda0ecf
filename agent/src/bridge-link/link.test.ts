import { test } from 'node:test';
import assert from 'node:assert/strict';
import { reconnectDelay } from './link.ts';

test('after a bridge restart the agent retries at once, then backs off with jitter up to a 10 s cap', () => {
  const worst = () => 0.999;
  const best = () => 0;
  assert.ok(reconnectDelay(0, 500, 10_000, worst) < 250, 'the first retry comes within a quarter second');
  const waits = Array.from({ length: 12 }, (_, i) => reconnectDelay(i, 500, 10_000, worst));
  // A bridge back after 5 s is found within the next ~3 s: the waits so far add up slowly.
  assert.ok(waits.slice(0, 5).reduce((a, b) => a + b, 0) < 12_000, `first five waits ${waits.slice(0, 5).join(', ')}`);
  assert.ok(
    waits.every((w) => w <= 15_000),
    'never more than 1.5 x the 10 s cap',
  );
  assert.equal(reconnectDelay(11, 500, 10_000, best), 5_000, 'the cap holds with jitter at its low end');
  for (let i = 1; i < 6; i++) assert.ok(reconnectDelay(i + 1, 500, 10_000, best) >= reconnectDelay(i, 500, 10_000, best), 'waits grow');
});
