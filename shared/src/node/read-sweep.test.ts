/**
 * The read sweep (read-sweep.ts): a scavenge is asked for only once the external memory climbs a step
 * above what was live after the last one, looked at once per `lookEveryBytes` read; and the process's
 * own sweep really reaches V8.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PerformanceObserver, constants, type PerformanceEntry } from 'node:perf_hooks';
import { ReadSweep, scavengeNow } from './read-sweep.ts';

const MiB = 1024 * 1024;

/** A sweep over a fake heap whose external memory the test sets; it counts looks and scavenges. */
function fakeHeap(startExternal: number) {
  const heap = { external: startExternal, looks: 0, scavenges: 0 };
  const sweep = new ReadSweep(
    {
      externalBytes: () => {
        heap.looks++;
        return heap.external;
      },
      scavenge: () => {
        heap.scavenges++;
      },
    },
    { lookEveryBytes: 4 * MiB, stepBytes: 16 * MiB },
  );
  return { heap, sweep };
}

test('the external memory is looked at once per 4 MiB read, not per read', () => {
  const { heap, sweep } = fakeHeap(10 * MiB);
  for (let i = 0; i < 255; i++) sweep.read(16 * 1024); // 4 MiB less 16 KiB
  assert.equal(heap.looks, 0);
  sweep.read(16 * 1024);
  assert.equal(heap.looks, 1);
});

test('reads whose buffers V8 frees in time never cause a scavenge', () => {
  const { heap, sweep } = fakeHeap(10 * MiB);
  for (let i = 0; i < 100; i++) {
    heap.external = 10 * MiB + (i % 3) * 4 * MiB; // V8's own scavenges keep it within 8 MiB
    sweep.read(4 * MiB);
  }
  assert.equal(heap.scavenges, 0);
});

test('external memory 16 MiB above the live level gets one scavenge, then a new level is taken', () => {
  const { heap, sweep } = fakeHeap(10 * MiB);
  // Each step: the external memory V8 reports at a look (4 MiB read), and the scavenges asked for by then.
  const steps: Array<[externalMiB: number, scavenges: number, why: string]> = [
    [10, 0, 'the first look takes the level: 10 MiB'],
    [25, 0, '15 MiB above the level is under the step'],
    [26, 1, '16 MiB above it'],
    // V8 frees the dead buffers concurrently: the next look takes the level from what it then sees.
    [30, 1, 'the look after a scavenge only takes the level (more is live now: writes queued to a slow peer)'],
    [45, 1, '15 MiB above the new level of 30 MiB'],
    [46, 2, '16 MiB above it'],
  ];
  for (const [externalMiB, scavenges, why] of steps) {
    heap.external = externalMiB * MiB;
    sweep.read(4 * MiB);
    assert.equal(heap.scavenges, scavenges, why);
  }
  assert.equal(sweep.scavenges, 2);
});

test('the level follows the external memory down', () => {
  const { heap, sweep } = fakeHeap(40 * MiB);
  sweep.read(4 * MiB); // level 40 MiB
  heap.external = 8 * MiB; // a full collection freed most of it
  sweep.read(4 * MiB);
  heap.external = 24 * MiB;
  sweep.read(4 * MiB);
  assert.equal(heap.scavenges, 1, '16 MiB above the lower level');
});

test("the process's scavenge is V8's: a minor collection runs within the call", async () => {
  const entries: Array<PerformanceEntry & { detail?: unknown }> = [];
  const observer = new PerformanceObserver((list) => entries.push(...list.getEntries()));
  observer.observe({ entryTypes: ['gc'] });
  try {
    const from = performance.now();
    assert.equal(scavengeNow(), true);
    const to = performance.now();
    // GC entries are delivered asynchronously.
    for (let i = 0; i < 50 && !entries.some((e) => e.startTime >= from && e.startTime <= to); i++) await new Promise((r) => setTimeout(r, 10));
    const minor = entries.filter(
      (e) => e.startTime >= from && e.startTime <= to && (e.detail as { kind?: number } | undefined)?.kind === constants.NODE_PERFORMANCE_GC_MINOR,
    );
    assert.equal(minor.length, 1, `GC entries seen: ${JSON.stringify(entries.map((e) => [e.startTime, e.detail]))}`);
  } finally {
    observer.disconnect();
  }
});
