/**
 * SQLite store cost (a measurement, not a test) through the real store classes on a real file in a
 * temp directory (WAL, as the programs open it), so the figures include Drizzle's query building and
 * the driver (node:sqlite since issue 13; better-sqlite3 before):
 * - agent: audit rows written (`Audit.record`, one INSERT each, autocommit), read-only calls counted
 *   (`Audit.summarise`, an upsert), key lookups (`KeyRegistry.list(user)`), job writes (`JobStore`:
 *   insert in a transaction, mark running, save log, mark finished) and `JobStore.get`;
 * - bridge: `SqliteKeyStore.getByMd5` (every sign-in), `touch`, and `enroll` (a transaction).
 * Each row is the median of BENCH_ROUNDS rounds of BENCH_N operations; µs per operation.
 *
 * Env: BENCH_N (default 2000), BENCH_ROUNDS (5).
 */
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '@hostadm/agent/store/db.ts';
import { Audit } from '@hostadm/agent/server/audit.ts';
import { KeyRegistry, parsePublicKey } from '@hostadm/agent/server/keys.ts';
import { JobStore } from '@hostadm/agent/jobs/job-store.ts';
import { SqliteKeyStore } from '@hostadm/bridge';

const N = Number(process.env.BENCH_N ?? 2000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

/** Runs `op(i)` N times per round; prints µs per operation (median round). */
async function measure(label: string, op: (i: number) => unknown): Promise<void> {
  const perOp: number[] = [];
  let next = 0;
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = performance.now();
    for (let i = 0; i < N; i++) await op(next++);
    perOp.push(((performance.now() - t0) * 1000) / N);
  }
  const us = median(perOp);
  console.log(`${label.padEnd(50)} ${us.toFixed(1).padStart(7)} µs/op  ${(1e6 / us).toFixed(0).padStart(7)} op/s`);
}

const dir = mkdtempSync(join(tmpdir(), 'hostadm-store-bench-'));
try {
  const clock = { now: () => Date.now() };
  const store = openStore(join(dir, 'agent'));
  const audit = new Audit(store.db, clock, { maxAgeDays: 30, maxRows: 10_000_000 });
  const entry = { user: 'admin', address: '127.0.0.1', transport: 'ws', namespace: 'rpc', name: 'systemmanager', action: 'reboot' };
  await measure('agent Audit.record (INSERT)', (i) => audit.record({ ...entry, code: 0, detail: `job ${i}` }));
  await measure('agent Audit.summarise (upsert)', () => audit.summarise(entry));

  const keys = new KeyRegistry(store.db, clock);
  for (let k = 0; k < 20; k++) {
    const { publicKey } = generateKeyPairSync('ed25519');
    const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
    const b64 = Buffer.from(pem).toString('base64');
    keys.register(k % 2 === 0 ? 'admin' : 'operator', b64, parsePublicKey(b64), { nickname: `key-${k}` });
  }
  await measure('agent KeyRegistry.list(user) (10 keys)', () => keys.list('admin'));

  const jobs = new JobStore(store.db, { maxFinishedJobs: 10_000_000, maxStoredLogBytes: 1e12 });
  let seq = jobs.nextSeq();
  await measure('agent JobStore insert+run+log+finish (4 writes)', (i) => {
    const id = `bench-${i}`;
    jobs.insertAll([
      { id, queue: 'no_queue', type: 'run', params: { cmd: 'true' }, commands: ['true'], owner: 'admin', state: 'pending', seq: seq++, createdAt: new Date() },
    ]);
    jobs.markRunning(id, new Date());
    jobs.saveLog(id, 'output line\n', false, { true: '0' });
    jobs.markFinished(id, { finishedAt: new Date(), success: true, reason: '', log: 'output line\n', logTruncated: false, returnCodes: { true: '0' } });
  });
  await measure('agent JobStore.get', (i) => jobs.get(`bench-${i % N}`));
  store.close();

  const bridge = new SqliteKeyStore(join(dir, 'bridge'));
  const md5s: string[] = [];
  await measure('bridge enroll (transaction)', (i) => {
    const md5Key = `md5-${i}-${randomUUID()}`;
    md5s.push(md5Key);
    const now = Date.now();
    return bridge.enroll(
      { jti: randomUUID(), expiresAt: now + 3_600_000 },
      { id: randomUUID(), md5Key, spkiPem: 'pem', algorithm: 'ed25519', kind: 'client', nickname: '', createdBy: 'bench', createdAt: now },
      now,
    );
  });
  await measure('bridge getByMd5 (sign-in lookup)', (i) => bridge.getByMd5(md5s[i % md5s.length]!));
  await measure('bridge touch (UPDATE last_seen)', async (i) => {
    const key = await bridge.getByMd5(md5s[i % md5s.length]!);
    if (key) await bridge.touch(key.id, Date.now());
  });
  bridge.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
