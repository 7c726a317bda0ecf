/**
 * An audit row has a bounded size, so the row limit bounds the audit log's bytes (issue 12 item 6): a
 * refused request's class and action names are written as the request sent them, and a `run`'s
 * detail holds its commands (a chain of 20 commands of 8 KiB here); each can be most of a 1 MiB frame. The row keeps the start of each and
 * says how much was cut.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agentFor, clientFor } from '../helpers/agent.ts';

test('an audit row keeps at most 128 characters of a name and 4096 of its detail, saying how much was cut', async (t) => {
  const agent = await agentFor(t);
  const admin = await clientFor(t, agent, 'admin');

  const unknownClass = await admin.request('admin', `zfs${'x'.repeat(400_000)}`, { action: 'list_pools' });
  assert.equal((unknownClass.args as { code: number }).code, 404);
  const unknownAction = await admin.call('settings', `list${'y'.repeat(400_000)}`);
  assert.equal((unknownAction.args as { code: number }).code, 400);
  const done = admin.nextEvent((e) => JSON.stringify(e.args).includes('"finished"'));
  await admin.request('events', 'subscribe', ['dispatcher']);
  const run = await admin.request('rpc', 'dispatcher', { action: 'run', long: Array.from({ length: 20 }, () => `echo ${'z'.repeat(8000)}`) });
  assert.equal(run.name, 'response', JSON.stringify(run.args).slice(0, 300));
  await done;

  const rows = agent.services.audit.recent(20);
  const byClass = rows.find((r) => r.name.startsWith('zfsxxx'));
  const byAction = rows.find((r) => r.action.startsWith('listyyy'));
  const byRun = rows.find((r) => r.action === 'run');
  assert.ok(byClass && byAction && byRun, JSON.stringify(rows.map((r) => [r.name.slice(0, 10), r.action.slice(0, 10), r.code])));
  assert.equal(byClass.name, `zfs${'x'.repeat(125)}… (${400_003 - 128} more characters)`);
  assert.equal(byAction.action, `list${'y'.repeat(124)}… (${400_004 - 128} more characters)`);
  assert.match(byRun.detail, /^started long: echo z+… \(\d+ more characters\)$/);
  assert.ok(byRun.detail.length < 4200, `detail of ${byRun.detail.length} characters`);
  for (const row of rows) {
    const size = row.name.length + row.action.length + row.detail.length + row.namespace.length + row.user.length + row.address.length;
    assert.ok(size < 5000, `a row of ${size} characters`);
  }
});
