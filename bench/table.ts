/** One row of `npm run bench`'s table. Rates are per second, latencies in milliseconds. */
export interface BenchRow {
  row: string;
  rate: number;
  p50: number | null;
  p99: number | null;
  /** The rate of this row's ceiling, measured in the same run; null for a ceiling itself. */
  ceilingRate: number | null;
  note?: string;
  /** Why the row failed (its endpoint answered non-2xx or not at all); a failed row's numbers mean nothing. */
  failed?: string;
}

const fmt = (n: number | null, digits = 1) => (n === null ? '–' : n.toFixed(digits));

/** The table as Markdown, so it can be pasted into the README's Performance table. */
export function formatTable(rows: BenchRow[]): string {
  const lines = [
    '| row | per second | p50 ms | p99 ms | ratio to ceiling | note |',
    '|---|---:|---:|---:|---:|---|',
    ...rows.map(
      (r) =>
        `| ${r.row} | ${fmt(r.rate, r.rate < 10 ? 1 : 0)} | ${fmt(r.p50)} | ${fmt(r.p99)} | ${
          r.ceilingRate ? fmt(r.rate / r.ceilingRate, 2) : '–'
        } | ${[r.failed ? `FAILED: ${r.failed}` : '', r.note ?? ''].filter(Boolean).join('; ')} |`,
    ),
  ];
  return lines.join('\n');
}
