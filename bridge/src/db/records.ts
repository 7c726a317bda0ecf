/** @module Rows of `bridge_keys` as the relay's KeyRecord (times in ms), and the queries every KeyStore driver shares. */
import { and, eq, isNull, lt, lte, type SQL } from 'drizzle-orm';
import type { BlacklistRule, KeyRecord } from '../relay/ports.ts';
import { authFailures, blacklist, bridgeKeys, usedJoinTokens } from './schema.ts';

export type KeyRow = typeof bridgeKeys.$inferSelect;

export function keyRecordOf(r: KeyRow): KeyRecord {
  return {
    id: r.id,
    md5Key: r.md5Key,
    spkiPem: r.spkiPem,
    algorithm: r.algorithm,
    kind: r.kind,
    nickname: r.nickname,
    createdBy: r.createdBy,
    createdAt: r.createdAt.getTime(),
    lastSeenAt: r.lastSeenAt ? r.lastSeenAt.getTime() : null,
    revokedAt: r.revokedAt ? r.revokedAt.getTime() : null,
  };
}

/** Live (unrevoked) agent keys holding `nickname`: a host's name belongs to the key enrolled with it. */
export function liveAgentNamed(nickname: string): SQL | undefined {
  return and(eq(bridgeKeys.kind, 'agent'), eq(bridgeKeys.nickname, nickname), isNull(bridgeKeys.revokedAt));
}

/**
 * The rows `KeyStore.prune` may delete at `now`, per table (the rule in relay/ports.ts): a token
 * expired before now fails its signature check; a block whose `until` has come is lifted
 * (`isBlocked` wants `until > now`); a failure at or before the window's start is no longer counted
 * (`recordFailure` counts `at > now - window`). Each is indexed on the column it compares.
 */
export function prunable(now: number, rule: BlacklistRule): { usedJoinTokens: SQL; blacklist: SQL; authFailures: SQL } {
  return {
    usedJoinTokens: lt(usedJoinTokens.expiresAt, new Date(now)),
    blacklist: lte(blacklist.until, new Date(now)),
    authFailures: lte(authFailures.at, new Date(now - rule.windowMs)),
  };
}
