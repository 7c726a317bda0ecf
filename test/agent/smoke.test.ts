import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertFullQuery, startTestAgent, TestClient } from '../helpers/agent.ts';

test('a signed-in admin gets a token with real seconds and sees its subsystems', async (t) => {
  const agent = await startTestAgent();
  t.after(() => agent.dispose());
  const client = await TestClient.connect(agent.url);
  t.after(() => client.close());
  const reply = await client.request('rpc', 'auth', { username: 'admin', password: 'test-pass-1' });
  assert.equal(reply.name, 'response');
  const [token, seconds] = reply.args as [string, number];
  assert.match(token, /^[A-Za-z0-9]{40}$/);
  assert.equal(seconds, 300);
  const query = await client.request('rpc', 'query', {});
  assertFullQuery(query.args);
});
