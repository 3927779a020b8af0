import autocannon from 'autocannon';
import type { BenchRow } from './table';

export interface LoadOptions {
  connections: number;
  /** Seconds. */
  duration: number;
}

export interface Target {
  row: string;
  baseUrl: string;
  method?: 'GET' | 'POST' | 'PATCH';
  headers?: Record<string, string>;
  /** A fresh path (and body, for POST) for every request: random pairs, not one cached answer. */
  request: () => { path: string; body?: string };
}

/**
 * Drives one row with autocannon and reads rate and latency from its result. A row whose
 * endpoint answers anything but 2xx (or not at all) is reported as failed: a 404 is fast, and a
 * table that shows it as a rate would mislead.
 */
export async function drive(target: Target, load: LoadOptions, ceilingRate: number | null): Promise<BenchRow> {
  const result = await autocannon({
    url: target.baseUrl,
    connections: load.connections,
    duration: load.duration,
    // Slow rows on a loaded machine are measured, not turned into errors.
    timeout: 60,
    requests: [
      {
        method: target.method ?? 'GET',
        headers: { 'content-type': 'application/json', ...target.headers },
        setupRequest: (req) => ({ ...req, ...target.request() }),
      },
    ],
  });
  const answered = result['2xx'] + result.non2xx;
  let failed: string | undefined;
  if (answered === 0) {
    failed = `no answer within the row's ${load.duration} s (a request takes longer than that here)`;
  } else if (result['2xx'] === 0 || result.non2xx > 0 || result.errors > 0) {
    const codes = Object.keys(result.statusCodeStats ?? {}).join(', ') || 'none';
    failed = `${result.non2xx} of ${answered} answers non-2xx (status ${codes}), ${result.errors} errors`;
  }
  return {
    row: target.row,
    rate: result['2xx'] / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    ceilingRate,
    ...(failed ? { failed } : {}),
  };
}
