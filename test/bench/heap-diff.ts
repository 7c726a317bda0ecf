/**
 * What grew between two V8 heap snapshots, per kind of object: for idle-memory.bench.ts's snapshots
 * (BENCH_HEAP_SNAPSHOTS), the bytes each idle agent adds, by constructor (objects), by kind (strings,
 * arrays, closures, hash tables, ...), largest first. Self sizes only: each byte is counted once.
 *
 * Run: node test/bench/heap-diff.ts BEFORE.heapsnapshot AFTER.heapsnapshot [connections added] [rows]
 */
import { readFileSync } from 'node:fs';

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
}

/** Count and self size per "type:name" (objects by constructor; strings, code, arrays by type). */
function tally(file: string): Map<string, { count: number; size: number }> {
  const snap = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
  const fields = snap.snapshot.meta.node_fields;
  const types = snap.snapshot.meta.node_types[0];
  const width = fields.length;
  const typeAt = fields.indexOf('type');
  const nameAt = fields.indexOf('name');
  const sizeAt = fields.indexOf('self_size');
  const out = new Map<string, { count: number; size: number }>();
  for (let i = 0; i < snap.nodes.length; i += width) {
    const type = types[snap.nodes[i + typeAt]!]!;
    const name = snap.strings[snap.nodes[i + nameAt]!]!;
    // Strings and numbers are named by their content: grouped by type alone.
    const key = type === 'object' || type === 'native' || type === 'closure' || type === 'hidden' || type === 'array' ? `${type}:${name.slice(0, 60)}` : type;
    const entry = out.get(key) ?? { count: 0, size: 0 };
    entry.count++;
    entry.size += snap.nodes[i + sizeAt]!;
    out.set(key, entry);
  }
  return out;
}

const [beforeFile, afterFile, connections = '1', rows = '40'] = process.argv.slice(2);
if (!beforeFile || !afterFile) {
  console.error('usage: node test/bench/heap-diff.ts BEFORE.heapsnapshot AFTER.heapsnapshot [connections added] [rows]');
  process.exit(2);
}
const n = Number(connections);
const before = tally(beforeFile);
const after = tally(afterFile);
const diff = [...after].map(([key, a]) => {
  const b = before.get(key) ?? { count: 0, size: 0 };
  return { key, count: (a.count - b.count) / n, size: (a.size - b.size) / n };
});
diff.sort((x, y) => Math.abs(y.size) - Math.abs(x.size));
const total = diff.reduce((sum, d) => sum + d.size, 0);
console.log(`per connection (${n} added): ${total.toFixed(0)} bytes of heap`);
for (const d of diff.slice(0, Number(rows))) console.log(`${d.size.toFixed(1).padStart(9)} B  ${d.count.toFixed(2).padStart(7)} ×  ${d.key}`);
