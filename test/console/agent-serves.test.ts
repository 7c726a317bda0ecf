/**
 * The agent serves the same console at / (for a host administered on the LAN), beside its REST API.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CONTENT_SECURITY_POLICY } from '@hostadm/console/server/headers.ts';
import { ensureConsoleBuilt } from '../../scripts/build-console.ts';
import { agentFor, rest, SIM_PASSWORD } from '../helpers/agent.ts';

ensureConsoleBuilt({ quiet: true });

test('the agent serves the console at / and its REST API as before', async (t) => {
  const agent = await agentFor(t);
  const page = await fetch(`${agent.httpUrl}/`, { headers: { 'accept-encoding': 'gzip' } });
  assert.equal(page.status, 200);
  assert.equal(page.headers.get('content-security-policy'), CONTENT_SECURITY_POLICY);
  assert.equal(page.headers.get('cache-control'), 'no-cache');
  assert.equal(page.headers.get('content-encoding'), 'gzip');
  const html = await page.text();
  const css = /href="\.?\/(assets\/[^"]+\.css)"/.exec(html)?.[1];
  assert.ok(css);
  const style = await fetch(`${agent.httpUrl}/${css}`);
  assert.match(style.headers.get('cache-control') ?? '', /immutable/);
  assert.match(style.headers.get('content-type') ?? '', /text\/css/);
  await style.body?.cancel();
  // POST to / is not the console's: the REST app answers as it did.
  const post = await fetch(`${agent.httpUrl}/`, { method: 'POST' });
  assert.notEqual(post.status, 200);
  await post.body?.cancel();
  const query = await rest(agent, '/rpc/query', {}, { basic: ['admin', SIM_PASSWORD] });
  assert.equal(query.status, 200);
});
