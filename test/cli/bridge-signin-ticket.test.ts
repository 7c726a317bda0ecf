/**
 * The CLI keeps the bridge's sign-in ticket between commands (docs/bridge-protocol.md §2.3): each
 * command is the real `hostadm` binary in its own process; the first signs in to the bridge with its
 * RSA key and leaves the ticket in a 0600 file, the next signs in with the ticket (the bridge counts
 * no key proof), and one whose ticket the bridge refuses says so on stderr, signs in with the key and
 * succeeds.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { TestBridge } from '../bridge/helpers.ts';
import { runCli, show } from './cli-support.ts';
import { bridgedProfile } from './bridged-profile.ts';

async function bridgeSignIns(bridge: TestBridge): Promise<{ byTicket: number; issued: number; failures: number }> {
  const m = await bridge.metrics();
  return { byTicket: m.signins_by_ticket, issued: m.signin_tickets_issued, failures: m.signin_failures };
}

test('a bridged profile: the second command signs in to the bridge with the ticket the first left, no RSA; a refused one falls back to the key', async (t) => {
  const { bridge, agent, config, env } = await bridgedProfile(t, 'bridge-ticket-cli');

  const call = ['call', 'systemmanager', 'memorystats', '--profile', 'lab'];
  const before = await bridgeSignIns(bridge);
  const first = await runCli(call, { ...env, HOSTADM_JOIN_TOKEN: await bridge.token('client'), HOSTADM_ACCEPT_HOST_KEY: agent.services.hostKey.fingerprint });
  assert.equal(first.code, 0, show(first));
  const afterFirst = await bridgeSignIns(bridge);
  // Unpinned, the first command asks the directory where the host is (a key sign-in, which gives the
  // ticket), then signs in on the host's room with that ticket already.
  assert.deepEqual(afterFirst, { byTicket: before.byTicket + 1, issued: before.issued + 1, failures: before.failures });
  const ticketsDir = join(config, 'hostadm', 'tickets');
  const files = readdirSync(ticketsDir).filter((f) => f.startsWith('bridge-'));
  assert.equal(files.length, 1, `one bridge ticket file (${readdirSync(ticketsDir).join(', ')})`);
  const ticketFile = join(ticketsDir, files[0]!);
  assert.equal(statSync(ticketFile).mode & 0o777, 0o600, 'the ticket file is readable by its owner only');
  const kept = JSON.parse(readFileSync(ticketFile, 'utf8')) as { ticket: string; bridge: string; secret: string };
  assert.equal(kept.bridge, bridge.url, 'the ticket names the bridge it is for');
  assert.match(kept.ticket, /^bst1\./);

  const second = await runCli(call, env);
  assert.equal(second.code, 0, show(second));
  assert.match(second.stdout, /memorystats/);
  assert.equal(second.stderr, '', 'nothing to say when the ticket works');
  const afterSecond = await bridgeSignIns(bridge);
  assert.deepEqual(afterSecond, { ...afterFirst, byTicket: afterFirst.byTicket + 1 }, 'signed in by ticket, no new ticket, no failure');
  assert.equal(JSON.parse(readFileSync(ticketFile, 'utf8')).ticket, kept.ticket, 'the same ticket serves the next commands');

  // The bridge's clock passes the ticket's 8 hours (the CLI's does not): refused, said, and the key signs in.
  await bridge.clock.advance(9 * 3600);
  const third = await runCli(call, env);
  assert.equal(third.code, 0, show(third));
  assert.match(third.stdout, /memorystats/);
  assert.match(third.stderr, /hostadm: the bridge refused the sign-in ticket \(401 Unauthorized\); signing in with the key/);
  const afterThird = await bridgeSignIns(bridge);
  assert.deepEqual(afterThird, { byTicket: afterSecond.byTicket, issued: afterSecond.issued + 1, failures: afterSecond.failures + 1 });
  assert.notEqual(JSON.parse(readFileSync(ticketFile, 'utf8')).ticket, kept.ticket, 'a fresh ticket replaced the refused one');
});
