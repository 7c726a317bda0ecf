/** When each spec frequency falls (host local time; dates built with local constructors, so any TZ passes). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lastOccurrence } from './frequencies.ts';

const at = (y: number, mo: number, d: number, h = 0, mi = 0, s = 0) => new Date(y, mo - 1, d, h, mi, s).getTime();
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toString().slice(0, 24));

test('snapshot frequencies: daily@XX, hourly, 30min, 10min, 5min; none never', () => {
  const now = at(2026, 3, 18, 14, 37, 12); // a Wednesday
  assert.equal(iso(lastOccurrence('daily@09', now)), iso(at(2026, 3, 18, 9)));
  assert.equal(iso(lastOccurrence('daily@15', now)), iso(at(2026, 3, 17, 15)), 'later today has not come yet');
  assert.equal(iso(lastOccurrence('daily@0', now)), iso(at(2026, 3, 18, 0)));
  assert.equal(iso(lastOccurrence('hourly', now)), iso(at(2026, 3, 18, 14)));
  assert.equal(iso(lastOccurrence('30min', now)), iso(at(2026, 3, 18, 14, 30)));
  assert.equal(iso(lastOccurrence('10min', now)), iso(at(2026, 3, 18, 14, 30)));
  assert.equal(iso(lastOccurrence('5min', now)), iso(at(2026, 3, 18, 14, 35)));
  assert.equal(lastOccurrence('5min', at(2026, 3, 18, 14, 35)), at(2026, 3, 18, 14, 35), 'the boundary itself counts');
  assert.equal(lastOccurrence('none', now), null);
});

test('scrub frequencies: weekly@YY@XX with 01 = Monday … 07 = Sunday, monthly@ZZ@XX clamped to the month', () => {
  const wednesday = at(2026, 3, 18, 14, 0);
  assert.equal(iso(lastOccurrence('weekly@03@10', wednesday)), iso(at(2026, 3, 18, 10)));
  assert.equal(iso(lastOccurrence('weekly@03@15', wednesday)), iso(at(2026, 3, 11, 15)), 'later today: last week');
  assert.equal(iso(lastOccurrence('weekly@01@03', wednesday)), iso(at(2026, 3, 16, 3)));
  assert.equal(iso(lastOccurrence('weekly@07@03', wednesday)), iso(at(2026, 3, 15, 3)));
  assert.equal(iso(lastOccurrence('monthly@1@02', wednesday)), iso(at(2026, 3, 1, 2)));
  assert.equal(iso(lastOccurrence('monthly@20@02', wednesday)), iso(at(2026, 2, 20, 2)));
  assert.equal(iso(lastOccurrence('monthly@31@02', at(2026, 3, 5))), iso(at(2026, 2, 28, 2)), 'February has no 31st: its last day');
  assert.equal(iso(lastOccurrence('monthly@31@02', at(2026, 1, 5))), iso(at(2025, 12, 31, 2)), 'across the year');
});

test('replication frequencies: XX daily at that hour, hour, 30min, 10min; sync and manual never', () => {
  const now = at(2026, 3, 18, 14, 37);
  assert.equal(iso(lastOccurrence('3', now)), iso(at(2026, 3, 18, 3)));
  assert.equal(iso(lastOccurrence('22', now)), iso(at(2026, 3, 17, 22)));
  assert.equal(iso(lastOccurrence('hour', now)), iso(at(2026, 3, 18, 14)));
  assert.equal(lastOccurrence('sync', now), null);
  assert.equal(lastOccurrence('manual', now), null);
});
