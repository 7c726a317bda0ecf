/** @module Rows of `bridge_keys` as the relay's KeyRecord (times in ms), and the queries every KeyStore driver shares. */
import { and, eq, isNull, type SQL } from 'drizzle-orm';
import type { KeyRecord } from '../relay/ports.ts';
import { bridgeKeys } from './schema.ts';

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
