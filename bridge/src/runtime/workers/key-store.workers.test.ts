/**
 * Inside workerd: the bridge's migrations apply to D1, and D1KeyStore keeps the KeyStore contract
 * (relay/ports.ts) the Node store keeps: single-use tokens, one row per key, revocation that sticks
 * (first time wins), the blacklist window and block expiry. Each test uses its own ids and addresses
 * (D1 state is shared by the tests of this file).
 */
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import type { NewKey } from '../../relay/ports.ts';
import { D1KeyStore } from './key-store.ts';

const store = () => new D1KeyStore(env.DB);
let seq = 0;
const unique = (prefix: string) => `${prefix}${Date.now().toString(36)}${(++seq).toString(36)}`;

function newKey(overrides: Partial<NewKey> = {}): NewKey {
  return {
    id: unique('k'),
    md5Key: unique('md5-'),
    spkiPem: '-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n',
    algorithm: 'ed25519',
    kind: 'agent',
    nickname: unique('web-'),
    createdBy: 'root',
    createdAt: 1_700_000_000_000,
    ...overrides,
  };
}

const token = (expiresAt = Date.now() + 600_000) => ({ jti: crypto.randomUUID(), expiresAt });

async function rows(sql: string, ...params: unknown[]): Promise<Record<string, unknown>[]> {
  return (
    await env.DB.prepare(sql)
      .bind(...params)
      .all()
  ).results;
}

describe('D1 migrations', () => {
  it('create every table of src/db/schema.ts with its indexes', async () => {
    const names = (await rows("SELECT name, type FROM sqlite_master WHERE type IN ('table', 'index') AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'"))
      .map((r) => `${r.type}:${r.name}`)
      .sort();
    for (const table of ['auth_failures', 'blacklist', 'bridge_keys', 'used_join_tokens']) expect(names).toContain(`table:${table}`);
    for (const index of [
      'auth_failures_address_at',
      'auth_failures_at',
      'blacklist_until',
      'bridge_keys_md5',
      'bridge_keys_revoked_at',
      'used_join_tokens_expires_at',
    ]) {
      expect(names).toContain(`index:${index}`);
    }
    const columns = (await rows("SELECT name FROM pragma_table_info('bridge_keys')")).map((r) => r.name);
    expect(columns).toEqual(['id', 'md5_key', 'spki_pem', 'algorithm', 'kind', 'nickname', 'created_by', 'created_at', 'last_seen_at', 'revoked_at']);
    expect((await rows('SELECT name FROM d1_migrations')).map((r) => r.name)).toEqual(expect.arrayContaining(['0000_init.sql', '0001_retention.sql']));
  });
});

describe('D1KeyStore', () => {
  it('enrolls once; the same token twice is token-used, the same key again key-exists', async () => {
    const s = store();
    const key = newKey();
    const t = token();
    const first = await s.enroll(t, key, Date.now());
    expect(first).toEqual({ ok: true, key: { ...key, lastSeenAt: null, revokedAt: null } });
    expect(await s.getByMd5(key.md5Key)).toEqual({ ...key, lastSeenAt: null, revokedAt: null });
    expect(await s.find(key.id)).toMatchObject({ id: key.id });
    expect(await s.find(key.md5Key)).toMatchObject({ id: key.id });

    expect(await s.enroll(t, newKey(), Date.now())).toEqual({ ok: false, reason: 'token-used' });
    expect(await s.enroll(token(), newKey({ md5Key: key.md5Key }), Date.now())).toEqual({ ok: false, reason: 'key-exists' });
    expect(await rows('SELECT id FROM bridge_keys WHERE md5_key = ?', key.md5Key)).toHaveLength(1);
  });

  it('a failed enrollment is atomic: its token stays unused and can enroll another key', async () => {
    const s = store();
    const key = newKey();
    await s.enroll(token(), key, Date.now());
    const t = token();
    expect(await s.enroll(t, newKey({ md5Key: key.md5Key }), Date.now())).toEqual({ ok: false, reason: 'key-exists' });
    expect(await rows('SELECT jti FROM used_join_tokens WHERE jti = ?', t.jti)).toHaveLength(0);
    expect((await s.enroll(t, newKey(), Date.now())).ok).toBe(true);
  });

  it('a host nickname belongs to its live agent key: another agent key cannot take it until that key is revoked', async () => {
    const s = store();
    const first = newKey();
    await s.enroll(token(), first, Date.now());
    const t = token();
    expect(await s.enroll(t, newKey({ nickname: first.nickname }), Date.now())).toEqual({ ok: false, reason: 'nickname-taken' });
    expect(await rows('SELECT jti FROM used_join_tokens WHERE jti = ?', t.jti)).toHaveLength(0);
    expect((await s.enroll(token(), newKey({ nickname: first.nickname, kind: 'client', algorithm: 'rsa' }), Date.now())).ok).toBe(true);
    await s.revoke(first.id, Date.now());
    expect((await s.enroll(t, newKey({ nickname: first.nickname }), Date.now())).ok).toBe(true);
  });

  it('revokes by id or md5_key; the first revocation time wins; a revoked key cannot enroll again', async () => {
    const s = store();
    const a = newKey();
    const b = newKey({ kind: 'client', algorithm: 'rsa' });
    await s.enroll(token(), a, Date.now());
    await s.enroll(token(), b, Date.now());

    const t1 = 1_800_000_000_000;
    expect(await s.revoke(a.id, t1)).toMatchObject({ id: a.id, revokedAt: t1 });
    expect(await s.revoke(a.md5Key, t1 + 5000)).toMatchObject({ id: a.id, revokedAt: t1 });
    expect(await s.revoke(b.md5Key, t1 + 1000)).toMatchObject({ id: b.id, revokedAt: t1 + 1000 });
    expect(await s.revoke('k-no-such-key', t1)).toBeNull();

    expect(await s.enroll(token(), newKey({ md5Key: a.md5Key }), Date.now())).toEqual({ ok: false, reason: 'key-revoked' });
    expect((await s.listActive('agent')).map((k) => k.id)).not.toContain(a.id);
    expect((await s.listActive('client')).map((k) => k.id)).not.toContain(b.id);

    const since = (await s.revokedSince(t1 + 500)).map((k) => k.id);
    expect(since).toContain(b.id);
    expect(since).not.toContain(a.id);
    expect((await s.revokedSince(t1)).map((k) => k.id)).toEqual(expect.arrayContaining([a.id, b.id]));
  });

  it('touch records last_seen_at; list has every key, revoked or not', async () => {
    const s = store();
    const key = newKey();
    await s.enroll(token(), key, Date.now());
    await s.touch(key.id, 1_750_000_000_000);
    expect((await s.find(key.id))?.lastSeenAt).toBe(1_750_000_000_000);
    await s.revoke(key.id, Date.now());
    expect((await s.list()).map((k) => k.id)).toContain(key.id);
  });

  it('prunes expired used tokens when it enrolls', async () => {
    const s = store();
    const old = token(1_000);
    await s.enroll(old, newKey(), 500);
    expect(await rows('SELECT jti FROM used_join_tokens WHERE jti = ?', old.jti)).toHaveLength(1);
    await s.enroll(token(), newKey(), Date.now());
    expect(await rows('SELECT jti FROM used_join_tokens WHERE jti = ?', old.jti)).toHaveLength(0);
  });

  it('blacklist: the rule-th failure within the window blocks, older ones do not count, the block expires', async () => {
    const s = store();
    const rule = { failures: 3, windowMs: 60_000, blockMs: 600_000 };
    const address = `198.51.100.${++seq % 250}`;
    const t0 = 1_900_000_000_000;
    expect(await s.recordFailure(address, t0, rule)).toBe(false);
    // The first failure is out of the window by now: this one and the next count, not it.
    expect(await s.recordFailure(address, t0 + 61_000, rule)).toBe(false);
    expect(await s.recordFailure(address, t0 + 62_000, rule)).toBe(false);
    expect(await s.isBlocked(address, t0 + 62_000)).toBe(false);
    expect(await s.recordFailure(address, t0 + 63_000, rule)).toBe(true);
    expect(await s.isBlocked(address, t0 + 63_000)).toBe(true);
    expect(await s.isBlocked('198.51.100.251', t0 + 63_000)).toBe(false);
    expect(await rows('SELECT id FROM auth_failures WHERE address = ?', address)).toHaveLength(0);
    expect(await s.isBlocked(address, t0 + 63_000 + 600_000 - 1)).toBe(true);
    expect(await s.isBlocked(address, t0 + 63_000 + 600_000)).toBe(false);
    expect(await rows('SELECT address FROM blacklist WHERE address = ?', address)).toHaveLength(0);
  });

  it('prunes spent tokens past expiry, lifted blocks and failures out of the window, a batch per table at a time; keys stay', async () => {
    const s = store();
    // This test counts whole tables: it starts from empty ones (the tests of this file run in order).
    await env.DB.batch(['used_join_tokens', 'blacklist', 'auth_failures'].map((table) => env.DB.prepare(`DELETE FROM ${table}`)));
    const count = async (table: string) => Number((await rows(`SELECT count(*) AS n FROM ${table}`))[0]?.n);
    const tables = async () => ({ tokens: await count('used_join_tokens'), blocks: await count('blacklist'), failures: await count('auth_failures') });
    const rule = { failures: 2, windowMs: 60_000, blockMs: 120_000 };
    const t0 = 1_950_000_000_000;
    const keys = [newKey(), newKey(), newKey(), newKey(), newKey()];
    for (const key of keys) expect((await s.enroll(token(t0 + 60_000), key, t0)).ok).toBe(true);
    await s.revoke(keys[0]!.id, t0);
    for (let i = 0; i < 5; i++) for (let f = 0; f < rule.failures; f++) await s.recordFailure(`192.0.2.${i}`, t0, rule);
    for (let i = 0; i < 3; i++) await s.recordFailure(`203.0.113.${i}`, t0, rule);
    expect(await tables()).toEqual({ tokens: 5, blocks: 5, failures: 3 });

    // Nothing that can still decide something goes.
    expect(await s.prune(t0 + 30_000, rule, 2)).toEqual({ usedJoinTokens: 0, blacklist: 0, authFailures: 0 });
    // Past expiry and the window: at most 2 rows per table per call, until none is left.
    expect(await s.prune(t0 + 61_000, rule, 2)).toEqual({ usedJoinTokens: 2, blacklist: 0, authFailures: 2 });
    expect(await s.prune(t0 + 61_000, rule, 2)).toEqual({ usedJoinTokens: 2, blacklist: 0, authFailures: 1 });
    expect(await s.prune(t0 + 61_000, rule, 2)).toEqual({ usedJoinTokens: 1, blacklist: 0, authFailures: 0 });
    expect(await tables()).toEqual({ tokens: 0, blocks: 5, failures: 0 });
    expect(await s.isBlocked('192.0.2.0', t0 + 61_000)).toBe(true);
    // Blocks once lifted.
    expect(await s.prune(t0 + 120_000, rule, 2)).toEqual({ usedJoinTokens: 0, blacklist: 2, authFailures: 0 });
    expect(await s.prune(t0 + 120_000, rule, 10)).toEqual({ usedJoinTokens: 0, blacklist: 3, authFailures: 0 });
    expect(await tables()).toEqual({ tokens: 0, blocks: 0, failures: 0 });

    // Every key is still there, and the revoked one still cannot enroll again.
    for (const key of keys) expect(await s.getByMd5(key.md5Key)).not.toBeNull();
    expect(await s.enroll(token(), newKey({ md5Key: keys[0]!.md5Key }), Date.now())).toEqual({ ok: false, reason: 'key-revoked' });
  });
});
