/**
 * The agent's SQLite tables (Drizzle). Change a table here, then run `npm run db:generate`
 * to write the next migration into ./migrations; the agent applies them at start.
 */
import { sqliteTable, text, integer, index, uniqueIndex } from 'drizzle-orm/sqlite-core';

/** Keys registered with register_ssl_cert; a user may sign in with auth_ssl using any of them. */
export const sslKeys = sqliteTable(
  'ssl_keys',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    user: text('user').notNull(),
    /** base64 of the PEM the client registered (public key or certificate), as listed on the wire. */
    pubKey: text('pub_key').notNull(),
    /** base64 MD5 of the SPKI PEM public key (list_ssl_checksums, bridge matching). */
    md5Key: text('md5_key').notNull(),
    /** The SPKI PEM used for verification. */
    spkiPem: text('spki_pem').notNull(),
    algorithm: text('algorithm', { enum: ['rsa', 'ed25519'] }).notNull(),
    nickname: text('nickname').notNull().default(''),
    email: text('email').notNull().default(''),
    registeredAt: integer('registered_at', { mode: 'timestamp_ms' }).notNull(),
  },
  (t) => [uniqueIndex('ssl_keys_user_key').on(t.user, t.pubKey), index('ssl_keys_md5').on(t.md5Key)],
);

/**
 * Keys an administrator authorized on the host itself (`hostadm agent keys authorize MD5 --user U`)
 * before the key's owner first connects: the first channel opened through a bridge with that key (and
 * its public key, proven by the handshake) registers it for `user` and deletes the row. Until then the
 * agent lists the md5_key to its bridge so the client can reach it. Rows expire unused.
 */
export const keyAuthorizations = sqliteTable('key_authorizations', {
  md5Key: text('md5_key').primaryKey(),
  user: text('user').notNull(),
  createdAt: integer('created_at', { mode: 'timestamp_ms' }).notNull(),
  expiresAt: integer('expires_at', { mode: 'timestamp_ms' }).notNull(),
});

/** Failed logins per address, kept only as long as the counting window. */
export const authFailures = sqliteTable(
  'auth_failures',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    address: text('address').notNull(),
    at: integer('at', { mode: 'timestamp_ms' }).notNull(),
  },
  (t) => [index('auth_failures_address_at').on(t.address, t.at)],
);

/** Addresses refused until `until`; persisted so a restart does not lift a block. */
export const blacklist = sqliteTable('blacklist', {
  address: text('address').primaryKey(),
  until: integer('until', { mode: 'timestamp_ms' }).notNull(),
  reason: text('reason').notNull(),
});

/**
 * Who did what: one row per change (an action of `full` access), per sign-in attempt and per refused
 * request. Successful read-only calls are counted in `audit_summary` instead. Pruned by age and rows.
 */
export const auditLog = sqliteTable(
  'audit_log',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    at: integer('at', { mode: 'timestamp_ms' }).notNull(),
    user: text('user').notNull(),
    address: text('address').notNull(),
    transport: text('transport').notNull(),
    namespace: text('namespace').notNull(),
    name: text('name').notNull(),
    action: text('action').notNull(),
    /** 200 for success, otherwise the error code sent. */
    code: integer('code').notNull(),
    detail: text('detail').notNull().default(''),
  },
  (t) => [index('audit_log_at').on(t.at)],
);

/** Successful read-only calls, counted per hour, user, address, transport and action. */
export const auditSummary = sqliteTable(
  'audit_summary',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    /** Start of the hour (epoch ms) the calls fell in. */
    hour: integer('hour', { mode: 'timestamp_ms' }).notNull(),
    user: text('user').notNull(),
    address: text('address').notNull(),
    transport: text('transport').notNull(),
    namespace: text('namespace').notNull(),
    name: text('name').notNull(),
    action: text('action').notNull(),
    calls: integer('calls').notNull(),
    lastAt: integer('last_at', { mode: 'timestamp_ms' }).notNull(),
  },
  (t) => [uniqueIndex('audit_summary_bucket').on(t.hour, t.user, t.address, t.transport, t.namespace, t.name, t.action)],
);

/**
 * Dispatcher jobs. A row is written when a job is accepted, so nothing accepted is lost: after a
 * restart, pending jobs run and running ones are reported interrupted.
 */
export const jobs = sqliteTable(
  'jobs',
  {
    id: text('id').primaryKey(),
    queue: text('queue', { enum: ['no_queue', 'pkg_queue', 'jail_queue'] }).notNull(),
    /** The registered job type that runs it (`dispatcher.run`, `pkg.install`, ...). */
    type: text('type').notNull(),
    /** JSON parameters for the job type; enough to run the job again after a restart. */
    params: text('params').notNull(),
    /** JSON array of the commands as shown to clients. */
    commands: text('commands').notNull(),
    owner: text('owner').notNull(),
    state: text('state', { enum: ['pending', 'running', 'finished'] }).notNull(),
    /** Acceptance order; FIFO within a queue. */
    seq: integer('seq').notNull(),
    createdAt: integer('created_at', { mode: 'timestamp_ms' }).notNull(),
    startedAt: integer('started_at', { mode: 'timestamp_ms' }),
    finishedAt: integer('finished_at', { mode: 'timestamp_ms' }),
    success: integer('success', { mode: 'boolean' }),
    /** JSON object command → return code. */
    returnCodes: text('return_codes').notNull().default('{}'),
    log: text('log').notNull().default(''),
    /** UTF-8 size of `log`, so the total kept can be bounded without reading every log. */
    logBytes: integer('log_bytes').notNull().default(0),
    logTruncated: integer('log_truncated', { mode: 'boolean' }).notNull().default(false),
    /** Why a job ended without running to completion (killed, interrupted by a restart, ...). */
    reason: text('reason').notNull().default(''),
    acknowledged: integer('acknowledged', { mode: 'boolean' }).notNull().default(false),
  },
  (t) => [index('jobs_state_queue_seq').on(t.state, t.queue, t.seq)],
);

/**
 * Records a class keeps for itself, as JSON validated by the class's own schema on every read:
 * `snapshot` keeps its schedules, replication tasks and settings here (agent/src/snapshots/records.ts).
 * One table for all such classes, so a class needs no migration of its own.
 */
export const classRecords = sqliteTable(
  'class_records',
  {
    /** The owning class and the kind of record (`snapshot`, `schedule`). */
    owner: text('owner').notNull(),
    kind: text('kind').notNull(),
    key: text('key').notNull(),
    value: text('value').notNull(),
    updatedAt: integer('updated_at', { mode: 'timestamp_ms' }).notNull(),
  },
  (t) => [uniqueIndex('class_records_key').on(t.owner, t.kind, t.key)],
);
