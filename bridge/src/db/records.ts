/** @module Rows of `bridge_keys` as the relay's KeyRecord (times in ms), for every KeyStore driver. */
import type { KeyRecord } from '../relay/ports.ts';
import type { bridgeKeys } from './schema.ts';

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
