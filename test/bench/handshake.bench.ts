/**
 * Handshakes (docs/protocol.md "Resumption"):
 * - the resumed hsr1 handshake, both sides in this process (client R1, agent RA, client finish, RC
 *   check), against the full hsc1 handshake with RSA-2048: p50 per batch, wall and CPU; target p50 ≤ 1 ms
 *   (reported as the ratio of each batch's p50 to 1 ms, so the spread is that of the batch medians);
 * - opening 50 SDK clients at once through a Node bridge to a sim agent, resuming with tickets, against
 *   opening 50 SDK clients directly to the same agent (key sign-in), in alternating pairs; target ≤ 1.5×.
 *   Bridge, agent and clients share this process, so its CPU time is everything the openings cost; the
 *   ratio is of CPU time (wall time on a shared machine is printed, not judged).
 *
 * Run: node test/bench/handshake.bench.ts   (or `npm run bench handshake`)
 * Env: BENCH_HANDSHAKE_BATCHES (15), BENCH_PAIRS (9), BENCH_CLIENTS (50), BENCH_ROUNDS (3: openings of all
 * the clients per sample, CPU averaged)
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import {
  answerClientHandshake,
  answerResumption,
  clientTicketFrom,
  generateHostKey,
  hostKeyFromPem,
  startClientHandshake,
  startClientResumption,
  TICKET_LIFETIME_MS,
  TicketTable,
  type ClientTicket,
} from '@hostadm/shared/crypto/index.ts';
import { startAgent } from '@hostadm/agent/agent.ts';
import { parsePublicKey } from '@hostadm/agent/server/keys.ts';
import { issueJoinToken, joinSecretKey, startBridge } from '@hostadm/bridge';
import {
  bridgeTransport,
  connect,
  memoryBridgeTicketStore,
  memoryTicketStore,
  NodeWebSocket,
  type BridgeTicketStore,
  type HostadmClient,
  type TicketStore,
} from '../../client/sdk/src/node.ts';
import { alternatePairs, formatRatio, median, reportTarget, summarize } from './ab-pairs.ts';

const BATCHES = Number(process.env.BENCH_HANDSHAKE_BATCHES ?? 15);
const PER_BATCH = 20;
const PAIRS = Number(process.env.BENCH_PAIRS ?? 9);
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 50);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SETTLE_MS = 50;
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

console.log(
  `load average at start: ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
);

const client = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  publicKeyEncoding: { type: 'spki', format: 'pem' },
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
});

// ---------------------------------------------------------------- one handshake, in process

{
  const host = await hostKeyFromPem((await generateHostKey()).privatePkcs8Pem);
  const table = new TicketTable();
  const full = async (): Promise<ClientTicket> => {
    const hs = await startClientHandshake({ clientKeyPem: client.privateKey, clientSpkiPem: client.publicKey });
    const agent = await answerClientHandshake({ c1Args: hs.c1Args, clientSpkiPem: client.publicKey, hostKey: host });
    const done = await hs.finish(agent.a1Args, { pinnedHostKey: host.publicRaw });
    if (!(await agent.verifyC2(done.c2Args))) throw new Error('C2 did not verify');
    const now = Date.now();
    const state = { md5Key: hs.c1Args.md5_key, user: 'bench', hostKey: host.publicRaw, channel: 'hsc1', expiresAt: now + TICKET_LIFETIME_MS, provenAt: now };
    const message = table.issue({ ...state, secret: agent.resumptionSecret }, now);
    return clientTicketFrom(message, { secret: done.resumptionSecret, hostKey: host.publicRaw, md5Key: state.md5Key, now })!;
  };
  const resumeOnce = async (ticket: ClientTicket): Promise<void> => {
    const resumption = await startClientResumption(ticket);
    const state = table.take(resumption.r1Args.ticket, Date.now());
    if (!state) throw new Error('ticket not found');
    const agent = await answerResumption({ r1Args: resumption.r1Args, state, hostKey: host });
    const done = await resumption.finish(agent.raArgs);
    if (!agent.verifyRc(done.rcArgs)) throw new Error('RC did not verify');
  };
  const measure = async (label: string, once: () => Promise<void>, perBatch: number) => {
    const p50s: number[] = [];
    const cpu: number[] = [];
    for (let b = 0; b < BATCHES + 1; b++) {
      const times: number[] = [];
      const c0 = cpuMs();
      for (let i = 0; i < perBatch; i++) {
        const t0 = performance.now();
        await once();
        times.push(performance.now() - t0);
      }
      if (b === 0) continue; // warm-up
      cpu.push((cpuMs() - c0) / perBatch);
      p50s.push(median(times));
    }
    const s = summarize(p50s);
    console.log(
      `${label.padEnd(34)} wall p50 ${s.median.toFixed(3)} ms (batch p50s p10–p90 ${s.p10.toFixed(3)}–${s.p90.toFixed(3)})   CPU ${median(cpu).toFixed(3)} ms each`,
    );
    return s;
  };
  const tickets: ClientTicket[] = [];
  for (let i = 0; i < (BATCHES + 1) * PER_BATCH; i++) tickets.push(await full());
  await measure('full hsc1 handshake (RSA-2048)', async () => void (await full()), 5);
  const resumed = await measure('resumed hsr1 handshake', () => resumeOnce(tickets.pop()!), PER_BATCH);
  reportTarget('resumed handshake p50 / 1 ms', resumed, 1);
}

// ---------------------------------------------------------------- 50 SDK clients: bridge (resumed) vs direct

const top = mkdtempSync(join(tmpdir(), 'hostadm-bench-handshake-'));
const silent = pino({ level: 'silent' });
const bridge = await startBridge({
  listen: { host: '127.0.0.1', port: 0 },
  dataDir: join(top, 'bridge'),
  logger: silent,
  config: { maxConnectionsPerAddress: 100_000 },
});
const secret = joinSecretKey(join(top, 'bridge'));
const token = async (kind: 'agent' | 'client', nickname?: string) =>
  (await issueJoinToken(secret, { kind, ttlSeconds: 600, ...(nickname ? { nickname } : {}) }, Date.now())).token;
const agent = await startAgent({
  platform: 'sim',
  dataDir: join(top, 'agent'),
  host: '127.0.0.1',
  port: 0,
  simPassword: 'bench-pass-1',
  logger: silent,
  bridge: { url: bridge.url, joinToken: await token('agent', 'benchhost'), nickname: 'benchhost' },
});
try {
  await agent.bridgeLink?.ready();
  const pubKey = Buffer.from(client.publicKey).toString('base64');
  agent.services.keys.register('admin', pubKey, parsePublicKey(pubKey), {});
  const key = { privatePem: client.privateKey, publicPem: client.publicKey };
  const hostKey = agent.services.hostKey;
  const factory = (tickets: TicketStore, signInTickets: BridgeTicketStore, joinToken?: string) =>
    bridgeTransport({
      bridgeUrl: bridge.url,
      host: { fingerprint: hostKey.fingerprint },
      key,
      pinnedHostKey: hostKey.publicRaw,
      tickets,
      signInTickets,
      webSocket: NodeWebSocket,
      ...(joinToken ? { joinToken } : {}),
    });
  // Enroll the key at the bridge once.
  await (await connect({ transport: factory(memoryTicketStore(), memoryBridgeTicketStore(), await token('client')), reconnect: false })).close();

  const stores = Array.from({ length: CLIENTS }, () => memoryTicketStore());
  // Each client keeps its bridge sign-in ticket as it keeps its channel ticket (the CLI: files).
  const signInStores = Array.from({ length: CLIENTS }, () => memoryBridgeTicketStore());
  const openAll = async (open: (i: number) => Promise<HostadmClient>) => {
    const c0 = cpuMs();
    const t0 = performance.now();
    const clients = await Promise.all(Array.from({ length: CLIENTS }, (_, i) => open(i)));
    const wall = performance.now() - t0;
    const cpu = cpuMs() - c0;
    await Promise.all(clients.map((c) => c.close()));
    return { wall, cpu };
  };
  const bridged = (i: number) => connect({ transport: factory(stores[i]!, signInStores[i]!), reconnect: false });
  const direct = () => connect({ url: agent.url, auth: { key: { privatePem: client.privateKey } }, reconnect: false });
  // Each client's first opening is a full handshake; measure that once for reference, then resume.
  const first = await openAll(bridged);
  const walls = { direct: [] as number[], bridged: [] as number[] };
  // One sample = ROUNDS openings of all the clients, each once the previous one's closes have settled
  // (the bridge holds no client, then a pause for the agent's side), so that no cleanup of one side is
  // counted in the other's CPU time; and averaging ROUNDS makes a pair less swayed by a burst of load.
  const settled = async () => {
    for (let i = 0; i < 200 && bridge.metrics().connections.client > 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
  };
  const timed = (what: 'direct' | 'bridged', open: (i: number) => Promise<HostadmClient>) => async () => {
    let cpu = 0;
    for (let r = 0; r < ROUNDS; r++) {
      await settled();
      const one = await openAll(open);
      walls[what].push(one.wall);
      cpu += one.cpu;
    }
    return cpu / ROUNDS;
  };
  const { ratio, a, b } = await alternatePairs(timed('direct', direct), timed('bridged', bridged), PAIRS);
  const stillResuming = stores.every((s) => s.load() !== undefined);
  console.log(
    `open ${CLIENTS} SDK clients at once (CPU per opening of all, median of samples of ${ROUNDS}): direct CPU ${median(a).toFixed(0)} ms (wall ${median(walls.direct).toFixed(0)} ms), ` +
      `through the bridge resumed CPU ${median(b).toFixed(0)} ms (wall ${median(walls.bridged).toFixed(0)} ms), ` +
      `first opening (full RSA handshake) CPU ${first.cpu.toFixed(0)} ms (wall ${first.wall.toFixed(0)} ms); every client still holds a ticket: ${stillResuming}`,
  );
  console.log(`ratio bridged (resumed) / direct, CPU: ${formatRatio(ratio)}; wall: ${(median(walls.bridged) / median(walls.direct)).toFixed(2)}×`);
  reportTarget(`open ${CLIENTS} SDK clients through the bridge (resumed) vs directly, CPU`, ratio, 1.5);
} finally {
  await agent.close();
  await bridge.close();
  rmSync(top, { recursive: true, force: true });
  console.log(
    `load average at end: ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
  );
}
