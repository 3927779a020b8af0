/**
 * `npx tsx bench/heap-diff.ts <early.heapsnapshot> <end.heapsnapshot>`: what grew between two
 * heap snapshots of the service (written by `LOAD_HEAP_SNAPSHOTS=<folder> npm run load`). Sums
 * the objects' own sizes by kind (constructor name for objects; one line for all strings, all
 * code, ...) and prints the kinds that grew most. Asserts nothing.
 */
import { readFileSync } from 'node:fs';

interface HeapSnapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
}

/** Kinds whose `name` is content, not a class: counted as one line each. */
const BY_TYPE = new Set(['string', 'concatenated string', 'sliced string', 'code', 'number', 'regexp', 'hidden', 'synthetic', 'bigint']);

export function sizesByKind(file: string): Map<string, { count: number; bytes: number }> {
  const heap = JSON.parse(readFileSync(file, 'utf8')) as HeapSnapshot;
  const fields = heap.snapshot.meta.node_fields;
  const types = heap.snapshot.meta.node_types[0];
  const [typeAt, nameAt, sizeAt] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f)) as [number, number, number];
  const out = new Map<string, { count: number; bytes: number }>();
  for (let i = 0; i < heap.nodes.length; i += fields.length) {
    const type = types[heap.nodes[i + typeAt]!]!;
    const kind = BY_TYPE.has(type) ? `(${type})` : `${type} ${heap.strings[heap.nodes[i + nameAt]!]}`;
    const entry = out.get(kind) ?? { count: 0, bytes: 0 };
    entry.count += 1;
    entry.bytes += heap.nodes[i + sizeAt]!;
    out.set(kind, entry);
  }
  return out;
}

function main(): void {
  const [earlyFile, endFile] = process.argv.slice(2);
  if (!earlyFile || !endFile) throw new Error('usage: heap-diff <early.heapsnapshot> <end.heapsnapshot>');
  const early = sizesByKind(earlyFile);
  const end = sizesByKind(endFile);
  const total = (m: typeof early) => [...m.values()].reduce((sum, e) => sum + e.bytes, 0);
  const rows = [...new Set([...early.keys(), ...end.keys()])]
    .map((kind) => {
      const a = early.get(kind) ?? { count: 0, bytes: 0 };
      const b = end.get(kind) ?? { count: 0, bytes: 0 };
      return { kind, count: b.count - a.count, bytes: b.bytes - a.bytes, endBytes: b.bytes };
    })
    .sort((x, y) => y.bytes - x.bytes);
  const mib = (n: number) => (n / 2 ** 20).toFixed(2);
  process.stdout.write(`heap: ${mib(total(early))} MiB early, ${mib(total(end))} MiB at the end\n\n`);
  process.stdout.write('| kind | objects added | MiB added | MiB at the end |\n|---|---:|---:|---:|\n');
  for (const r of rows.slice(0, 25)) process.stdout.write(`| ${r.kind.slice(0, 80)} | ${r.count} | ${mib(r.bytes)} | ${mib(r.endBytes)} |\n`);
}

if (require.main === module) main();
