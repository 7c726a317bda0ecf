import { mkdtempSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { agentFor, registerKey } from '../helpers/agent.ts';
import { rsaKey } from '../helpers/keys.ts';
import { startTestBridge } from '../bridge/helpers.ts';
import { bridgeTransport, connect, NodeWebSocket } from '../../client/sdk/src/node.ts';

const CALLS = Number(process.env.PROFILE_CALLS ?? 20000);
const INFLIGHT = 64;

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Self time by source: a workspace file's package and folder, a dependency, a Node internal, or V8. */
function bySource(profile: Profile): Array<[string, number]> {
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const totals = new Map<string, number>();
  for (const node of profile.nodes) {
    const { functionName, url } = node.callFrame;
    if (functionName === '(idle)') continue;
    const source =
      /node_modules\/(@[^/]+\/[^/]+|[^/]+)/.exec(url)?.[1] ??
      /\/(shared|agent|bridge|client)\/(src\/)?([^/]+\/)?/.exec(url)?.[0].replace(/^\//, '') ??
      (url.startsWith('node:') ? url.replace(/^node:(internal\/)?/, 'node:').split('/')[0]! : url ? 'other' : `native ${functionName}`);
    totals.set(source, (totals.get(source) ?? 0) + (self.get(node.id) ?? 0));
  }
  return [...totals.entries()].sort((a, b) => b[1] - a[1]);
}

test('profile of bridged calls through the hsc3 channel', async (t) => {
  const bridge = await startTestBridge(t);
  const bridgeToken = await bridge.token('agent', { nickname: 'simhost' });
  const agent = await agentFor(t, { bridge: { url: bridge.url, joinToken: bridgeToken, nickname: 'simhost' } });
  await agent.bridgeLink?.ready();
  const key = rsaKey();
  await registerKey(t, agent, key);
  const client = await connect({
    transport: bridgeTransport({
      bridgeUrl: bridge.url,
      host: { name: 'simhost' },
      key: { privatePem: key.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), publicPem: Buffer.from(key.pubKeyB64, 'base64').toString('utf8') },
      joinToken: await bridge.token('client'),
      onHostKey: () => true,
      webSocket: NodeWebSocket,
    }),
  });
  t.after(() => client.close());
  const op = process.env.PROFILE_OP ?? 'query';
  const one = () => (op === 'memorystats' ? client.admin.systemmanager.memorystats() : client.query());
  for (let i = 0; i < 2000; i++) await one(); // warm-up: optimized code, caches, first allocations
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 100 });
  await session.post('Profiler.start');
  let started = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: INFLIGHT }, async () => {
      while (started < CALLS) {
        started++;
        await one();
      }
    }),
  );
  const cpu = process.cpuUsage(cpu0);
  const wall = performance.now() - t0;
  const { profile } = (await session.post('Profiler.stop')) as { profile: Profile };
  session.disconnect();
  const out = process.env.PROFILE_OUT ?? join(mkdtempSync(join(tmpdir(), 'hostadm-profile-')), 'roundtrip.cpuprofile');
  writeFileSync(out, JSON.stringify(profile));
  console.log(
    `${CALLS} ${op} calls, ${INFLIGHT} in flight: ${((cpu.user + cpu.system) / CALLS).toFixed(1)} µs CPU and ${((wall * 1000) / CALLS).toFixed(1)} µs wall per call`,
  );
  const sources = bySource(profile);
  const total = sources.reduce((sum, [, us]) => sum + us, 0);
  for (const [source, us] of sources.slice(0, 25)) console.log(`${((100 * us) / total).toFixed(1).padStart(5)}%  ${source}`);
  console.log(`profile: ${out}`);
});
