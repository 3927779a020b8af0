// Issue 6 (load): `npm run load` at a tiny scale (2 s, 4 connections). Under mixed traffic the
// service answers every request (docs/api.md: valid requests get 2xx) with no 5xx and no socket
// error. Counts only: timings on a shared machine mean nothing here.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sizesByKind } from '../../bench/heap-diff';
import { runMixedLoad } from '../../bench/mixed';
import { MONGO_URL } from '../helpers/stack';

test('a short mixed load (lists, searches, writes, access checks) gets no 5xx and no socket error', async () => {
  const heapSnapshots = mkdtempSync(join(tmpdir(), 'cag-heap-'));
  const report = await runMixedLoad({
    mongoUrl: MONGO_URL,
    duration: 2,
    connections: 4,
    users: 200,
    courses: 40,
    groups: 5,
    timeout: 30,
    logLevel: 'silent',
    heapSnapshots,
  });
  expect(report.requests).toBeGreaterThan(0);
  expect(report['5xx']).toBe(0);
  expect(report.socketErrors).toBe(0);
  // Every request of the mix is valid: anything but 2xx is a defect the report would hide.
  expect(report['2xx']).toBe(report.requests);
  // The memory diagnosis the 10-minute run relies on: live heap figures and two comparable snapshots.
  expect(report.heapEarlyMiB).toBeGreaterThan(0);
  expect(report.heapEndMiB).toBeGreaterThan(0);
  expect(report.heapTotalEndMiB).toBeGreaterThanOrEqual(report.heapEndMiB);
  for (const name of ['early', 'end']) expect(existsSync(join(heapSnapshots, `${name}.heapsnapshot`))).toBe(true);
  const kinds = sizesByKind(join(heapSnapshots, 'end.heapsnapshot'));
  expect(kinds.get('(string)')?.count).toBeGreaterThan(1000);
  expect(kinds.get('object Object')?.bytes).toBeGreaterThan(0);
  rmSync(heapSnapshots, { recursive: true, force: true });
}, 120000);
