/**
 * @module The bridge's tables (Drizzle, SQLite dialect). The same schema and the migrations that
 * drizzle-kit writes next to it serve node:sqlite (Node) and D1 (Workers), so keep to plain
 * SQLite: text, integer, indexes; no triggers, no extensions.
 *
 * Change a table here, then run `drizzle-kit generate --config bridge/drizzle.config.ts` from the
 * repository root to write the next migration into ./migrations.
 */
import { sqliteTable, text, integer, index, primaryKey, uniqueIndex } from 'drizzle-orm/sqlite-core';

/** Keys enrolled with a join token; agents and clients sign in to the bridge with them. */
export const bridgeKeys = sqliteTable(
  'bridge_keys',
  {
    /** Short random id (`k` + 11 letters and digits), shown by `hostadm bridge keys list`. */
    id: text('id').primaryKey(),
    /** base64 MD5 of the SPKI PEM (docs/bridge-protocol.md §1). */
    md5Key: text('md5_key').notNull(),
    spkiPem: text('spki_pem').notNull(),
    algorithm: text('algorithm', { enum: ['rsa', 'ed25519'] }).notNull(),
    kind: text('kind', { enum: ['agent', 'client'] }).notNull(),
    nickname: text('nickname').notNull().default(''),
    /** Who issued the join token that enrolled the key (the OS user running `hostadm bridge token`). */
    createdBy: text('created_by').notNull().default(''),
    createdAt: integer('created_at', { mode: 'timestamp_ms' }).notNull(),
    lastSeenAt: integer('last_seen_at', { mode: 'timestamp_ms' }),
    /**
     * Set once; a revoked key never signs in again and cannot be enrolled again. Its row is never
     * pruned, since the row is what refuses the key (rows come only from the operator's join tokens).
     */
    revokedAt: integer('revoked_at', { mode: 'timestamp_ms' }),
  },
  (t) => [uniqueIndex('bridge_keys_md5').on(t.md5Key), index('bridge_keys_revoked_at').on(t.revokedAt)],
);

/** The `jti` of every join token used; a token works once. Rows may go once the token has expired. */
export const usedJoinTokens = sqliteTable(
  'used_join_tokens',
  {
    jti: text('jti').primaryKey(),
    usedAt: integer('used_at', { mode: 'timestamp_ms' }).notNull(),
    expiresAt: integer('expires_at', { mode: 'timestamp_ms' }).notNull(),
    keyId: text('key_id').notNull(),
  },
  (t) => [index('used_join_tokens_expires_at').on(t.expiresAt)],
);

/**
 * Failed sign-ins and enrollments per address, kept only as long as the counting window (the
 * periodic prune finds old rows of every address through `auth_failures_at`).
 */
export const authFailures = sqliteTable(
  'auth_failures',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    address: text('address').notNull(),
    at: integer('at', { mode: 'timestamp_ms' }).notNull(),
  },
  (t) => [index('auth_failures_address_at').on(t.address, t.at), index('auth_failures_at').on(t.at)],
);

/**
 * Addresses refused until `until`; persisted so a restart does not lift a block. A lifted block is
 * pruned (`blacklist_until`), not only when its address comes back.
 */
export const blacklist = sqliteTable(
  'blacklist',
  {
    address: text('address').primaryKey(),
    until: integer('until', { mode: 'timestamp_ms' }).notNull(),
    reason: text('reason').notNull(),
  },
  (t) => [index('blacklist_until').on(t.until)],
);

/**
 * Where each online host is reached, by index entry (md5_key or `host:<nickname>`): written by the
 * host's own object when its agent lists its keys, read by directory sockets (docs/bridge-protocol.md
 * §2.10). Only the Workers bridge writes it: Node's rooms share one process. `scope` is '' in a
 * deployment (tests give each test its own).
 */
export const hostIndex = sqliteTable(
  'host_index',
  {
    scope: text('scope').notNull().default(''),
    entry: text('entry').notNull(),
    keyId: text('key_id').notNull(),
    connectionId: text('connection_id').notNull(),
    room: text('room').notNull(),
    nickname: text('nickname').notNull(),
    hostname: text('hostname').notNull(),
    fingerprint: text('fingerprint'),
    onlineSince: integer('online_since', { mode: 'timestamp_ms' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.scope, t.entry, t.keyId] }), index('host_index_key').on(t.scope, t.keyId)],
);

/** Which object holds each signed-in socket (Workers), so a revocation reaches every one. */
export const bridgeSessions = sqliteTable(
  'bridge_sessions',
  {
    connectionId: text('connection_id').primaryKey(),
    scope: text('scope').notNull().default(''),
    keyId: text('key_id').notNull(),
    object: text('object').notNull(),
    openedAt: integer('opened_at', { mode: 'timestamp_ms' }).notNull(),
  },
  (t) => [index('bridge_sessions_key').on(t.scope, t.keyId)],
);

/** Each object's counters (JSON of the metrics snapshot), flushed periodically; `/metrics` sums them. */
export const objectMetrics = sqliteTable(
  'object_metrics',
  {
    object: text('object').primaryKey(),
    scope: text('scope').notNull().default(''),
    counters: text('counters').notNull(),
    updatedAt: integer('updated_at', { mode: 'timestamp_ms' }).notNull(),
  },
  (t) => [index('object_metrics_scope').on(t.scope)],
);
