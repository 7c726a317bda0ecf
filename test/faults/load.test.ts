/**
 * 1,000 clients at once through the Node bridge to one agent behind it (three processes: bridge and
 * agent as `hostadm` runs them, the clients here), each with its own end-to-end channel, each issuing
 * calls whose replies only it could have asked for: every reply arrives, none crosses to another
 * client, and the agent's resident memory stays bounded. Figures go to the test's diagnostics.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { mkdirSync } from 'node:fs';
import { HostadmRequestError, type HostadmClient } from '../../client/sdk/src/node.ts';
import { bridgeToken, bridgedClient, registerClientKey, rssOf, scratchDir, startAgentProcess, startBridgeProcess } from './support.ts';

const CLIENTS = Number(process.env.HOSTADM_LOAD_CLIENTS ?? 1000);
const OPENING_AT_ONCE = 50;
const MB = 1048576;

test(`${CLIENTS} concurrent clients through the bridge: every reply arrives at the client that asked, agent memory bounded`, async (t) => {
  const dir = scratchDir(t, 'load');
  const bridgeDir = join(dir, 'bridge');
  // The clients all come from loopback: this bridge lets one address hold them all.
  const { proc: bridgeProc, url: bridgeUrl } = await startBridgeProcess(t, bridgeDir, 0, ['--max-connections-per-address', String(CLIENTS + 100)]);
  const agentDir = join(dir, 'agent');
  mkdirSync(agentDir);
  const agent = await startAgentProcess(t, {
    dataDir: agentDir,
    bridgeUrl,
    joinToken: await bridgeToken(bridgeDir, 'agent', 'loadhost'),
    nickname: 'loadhost',
  });
  const { key, hostKey } = await registerClientKey(agent.url);
  const joinToken = await bridgeToken(bridgeDir, 'client', 'load-clients');
  const rssStart = rssOf(agent.proc.child.pid!);

  // The first client enrolls the key at the bridge; the rest sign in with it.
  const clients: HostadmClient[] = [await bridgedClient({ bridgeUrl, nickname: 'loadhost', key, hostKey, joinToken })];
  t.after(() => Promise.all(clients.map((c) => c.close())));
  const openStarted = Date.now();
  while (clients.length < CLIENTS) {
    const batch = Math.min(OPENING_AT_ONCE, CLIENTS - clients.length);
    clients.push(...(await Promise.all(Array.from({ length: batch }, () => bridgedClient({ bridgeUrl, nickname: 'loadhost', key, hostKey })))));
  }
  const openedMs = Date.now() - openStarted;
  const rssOpen = rssOf(agent.proc.child.pid!);

  // All at once: each asks for a log no one else asked for; the refusal names what it asked for.
  const callsStarted = Date.now();
  const results = await Promise.all(
    clients.map(async (client, n) => {
      const mine = `client${n}`;
      const refusal = await client.rpc.dispatcher.log({ job_id: mine }).then(
        () => 'answered',
        (e: unknown) => (e instanceof HostadmRequestError ? e.message : `unexpected: ${String(e)}`),
      );
      const query = await client.query();
      const memory = await client.admin.systemmanager.memorystats();
      return { n, refusal, query, memory };
    }),
  );
  const callsMs = Date.now() - callsStarted;
  const rssEnd = rssOf(agent.proc.child.pid!);

  for (const { n, refusal, query, memory } of results) {
    assert.match(refusal, new RegExp(`\\bclient${n}\\b`), `client ${n} got a reply meant for another: ${refusal}`);
    assert.equal((query as Record<string, string>)['admin/users'], 'read/write');
    assert.ok(memory.memorystats);
  }
  t.diagnostic(`${CLIENTS} clients opened in ${openedMs} ms (${OPENING_AT_ONCE} handshakes at a time); ${CLIENTS * 3} calls at once in ${callsMs} ms`);
  t.diagnostic(
    `agent RSS: ${(rssStart / MB).toFixed(0)} MB idle, ${(rssOpen / MB).toFixed(0)} MB with ${CLIENTS} channels, ${(rssEnd / MB).toFixed(0)} MB after the calls`,
  );
  assert.ok(rssEnd < rssStart + 512 * MB, `the agent grew from ${(rssStart / MB).toFixed(0)} to ${(rssEnd / MB).toFixed(0)} MB`);
  assert.ok(bridgeProc.child.exitCode === null && agent.proc.child.exitCode === null, 'bridge and agent are still running');
});
