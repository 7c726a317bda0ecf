/**
 * The CLI keeps a bridge profile's resumption ticket between commands (docs/protocol.md
 * "Resumption"): each command is the real `hostadm` binary in its own process; the first does the full
 * handshake and leaves the ticket in a 0600 file of the profile, the second resumes with it, and one
 * whose ticket expired at the host does the full handshake again, as does one whose ticket file names
 * another host key than the one pinned.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { auditedSignIns } from '../helpers/agent.ts';
import { runCli, show } from './cli-support.ts';
import { bridgedProfile } from './bridged-profile.ts';

test('a bridged profile: the second command resumes with the ticket the first left in a 0600 file', async (t) => {
  const { bridge, agent, config, env } = await bridgedProfile(t, 'resume-cli');

  const call = ['call', 'systemmanager', 'memorystats', '--profile', 'lab'];
  const first = await runCli(call, {
    ...env,
    HOSTADM_JOIN_TOKEN: await bridge.token('client'),
    HOSTADM_ACCEPT_HOST_KEY: agent.services.hostKey.fingerprint,
  });
  assert.equal(first.code, 0, show(first));
  assert.deepEqual(auditedSignIns(agent), ['auth_ssl 200']);
  const ticketFile = join(config, 'hostadm', 'tickets', 'profile-lab.json');
  assert.equal(statSync(ticketFile).mode & 0o777, 0o600, 'the ticket file is readable by its owner only');
  assert.equal(statSync(join(config, 'hostadm', 'tickets')).mode & 0o777, 0o700);
  const firstTicket = JSON.parse(readFileSync(ticketFile, 'utf8')) as { ticket: string; hostKey: string };
  assert.equal(firstTicket.hostKey, agent.services.hostKey.publicRaw, 'the ticket names the host it is for');

  const second = await runCli(call, env);
  assert.equal(second.code, 0, show(second));
  assert.match(second.stdout, /memorystats/);
  assert.deepEqual(auditedSignIns(agent), ['auth_ssl 200', 'auth_ssl 200 resumed']);
  const secondTicket = JSON.parse(readFileSync(ticketFile, 'utf8')) as { ticket: string };
  assert.notEqual(secondTicket.ticket, firstTicket.ticket, 'the resumed session left a fresh ticket');
  assert.equal(statSync(ticketFile).mode & 0o777, 0o600);

  // The host's clock passes the ticket's 8 hours: the next command does the full handshake, and works.
  agent.clock.advance(9 * 3600);
  const third = await runCli(call, env);
  assert.equal(third.code, 0, show(third));
  assert.deepEqual(auditedSignIns(agent).slice(-2), ['auth_resume 401', 'auth_ssl 200']);

  // A ticket file that names another host key than the pinned one (read ahead while the bridge answers
  // the upgrade, like every ticket) is never presented: the full handshake, and a fresh ticket for this host.
  const kept = JSON.parse(readFileSync(ticketFile, 'utf8')) as Record<string, unknown>;
  writeFileSync(ticketFile, JSON.stringify({ ...kept, hostKey: Buffer.alloc(32, 7).toString('base64') }), { mode: 0o600 });
  const fourth = await runCli(call, env);
  assert.equal(fourth.code, 0, show(fourth));
  assert.deepEqual(auditedSignIns(agent).slice(-3), ['auth_resume 401', 'auth_ssl 200', 'auth_ssl 200'], 'no auth_resume: the ticket stayed home');
  assert.equal((JSON.parse(readFileSync(ticketFile, 'utf8')) as { hostKey: string }).hostKey, agent.services.hostKey.publicRaw);
});
