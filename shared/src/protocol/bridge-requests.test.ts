import { test } from 'node:test';
import assert from 'node:assert/strict';
import { greetingChallengeOf } from './bridge-requests.ts';
import { eventEnvelope } from './envelope.ts';

const good = 'Kq3vX9aPz0LmN2bR7tYc5WdE8hJ1sF4g';
const greeting = (args: unknown) => eventEnvelope('bridge_greeting', args);

test("a greeting's test string is taken only with the shape a bridge issues; anything else means stage 1", () => {
  assert.equal(greetingChallengeOf(greeting({ test_string: good, expires_in: 30 })), good);
  for (const bad of ['', good.slice(1), `${good}A`, `${good.slice(0, 31)}\n`, `${good.slice(0, 31)}é`, 7, null]) {
    assert.equal(greetingChallengeOf(greeting({ test_string: bad })), null, JSON.stringify(bad));
  }
  assert.equal(greetingChallengeOf(eventEnvelope('bridge', { test_string: good })), null, 'another event');
  assert.equal(greetingChallengeOf({ id: '', name: 'event', namespace: 'rpc', args: { name: 'bridge_greeting', args: { test_string: good } } }), null);
  assert.equal(greetingChallengeOf(greeting(null)), null);
});
