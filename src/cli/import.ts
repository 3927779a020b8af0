import { createReadStream } from 'node:fs';
import { access } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import type { Db } from 'mongodb';
import { applyCatalogInfo, catalogInfoChanged, catalogInfoChangedDataSchema } from '../../consumers/handlers/catalog-info-changed';
import { registrationCompleted } from '../../consumers/handlers/registration-completed';
import { applyUserData, type UserEventData } from '../../consumers/handlers/user-event-data';
import { InvalidMessage } from '../../consumers/cloudevents';
import type { Infer } from '../validation';
import { normalizeEventTime, type ApplyOutcome } from '../domain/event-time';
import { progressReporter, type ProgressCounts } from './progress';

/**
 * The `time` of every imported line. The files carry none, and an import describes the platform
 * as it was before the service listened: the epoch is older than any real event, so a real event
 * always wins over an imported line, and importing the same line again is a duplicate (no change).
 */
export const IMPORT_TIME = normalizeEventTime('1970-01-01T00:00:00Z');

export type ImportSummary = ProgressCounts;

export class FatalImportError extends Error {}

export interface ImportOptions {
  users?: string;
  courses?: string;
  /** Lines applied at once; the file is read only as fast as they finish, so memory stays flat. */
  concurrency?: number;
  /** Progress, refused lines and the summary (stderr in the command). */
  out: NodeJS.WritableStream & { isTTY?: boolean };
}

type CourseLine = Infer<typeof catalogInfoChangedDataSchema>;

/** How one line of each file is validated and applied: the consumer's schemas and functions. */
const KINDS = {
  // A line is a registration: the user is upserted, and membership rules apply if it is active.
  users: {
    parse: (data: unknown) => registrationCompleted.parse(data).data as UserEventData,
    apply: (db: Db, data: UserEventData) => applyUserData(db, data, IMPORT_TIME, { forceActive: false, rules: data.user.is_active }),
  },
  courses: {
    parse: (data: unknown) => catalogInfoChanged.parse(data).data as CourseLine,
    apply: (db: Db, data: CourseLine) => applyCatalogInfo(db, data, IMPORT_TIME),
  },
} as const;

/** Imports the users file, then the courses file; every bad line is reported and skipped. */
export async function importFiles(db: Db, opts: ImportOptions): Promise<ImportSummary> {
  const files = (['users', 'courses'] as const).filter((k) => opts[k] !== undefined);
  if (files.length === 0) throw new FatalImportError('nothing to import: give --users FILE and/or --courses FILE');
  // Missing files are fatal before anything is written.
  for (const kind of files) {
    try {
      await access(opts[kind]!);
    } catch {
      throw new FatalImportError(`cannot read ${opts[kind]}`);
    }
  }
  const total: ImportSummary = { read: 0, applied: 0, unchanged: 0, refused: 0 };
  for (const kind of files) {
    const counts = await importFile(db, kind, opts[kind]!, opts);
    for (const k of Object.keys(total) as (keyof ImportSummary)[]) total[k] += counts[k];
  }
  return total;
}

async function importFile(db: Db, kind: keyof typeof KINDS, path: string, opts: ImportOptions): Promise<ImportSummary> {
  const counts: ImportSummary = { read: 0, applied: 0, unchanged: 0, refused: 0 };
  const concurrency = Math.max(1, opts.concurrency ?? 16);
  const progress = progressReporter(opts.out, `${kind} ${path}`, () => counts);
  // Never an email or a line's content here: the line number and what is wrong with it.
  const refuse = (lineNo: number, reason: string) => {
    counts.refused++;
    progress.note(`${path}:${lineNo}: refused: ${reason}`);
  };
  const inFlight = new Set<Promise<void>>();

  async function applyLine(lineNo: number, data: unknown) {
    let outcome: ApplyOutcome;
    try {
      outcome = await (KINDS[kind].apply as (db: Db, data: unknown) => Promise<ApplyOutcome>)(db, data);
    } catch (err) {
      if (err instanceof InvalidMessage) return refuse(lineNo, err.message);
      throw err; // the database failed: fatal, the import can be run again
    }
    if (outcome === 'applied') counts.applied++;
    else counts.unchanged++;
  }

  const lines = createInterface({ input: createReadStream(path, { encoding: 'utf8' }), crlfDelay: Infinity });
  let lineNo = 0;
  let failure: unknown = null;
  try {
    for await (const text of lines) {
      lineNo++;
      if (text.trim() === '') continue; // blank lines (a trailing newline) are not data
      counts.read++;
      let data: unknown;
      try {
        data = JSON.parse(text);
      } catch {
        refuse(lineNo, 'not valid JSON'); // JSON.parse's message quotes the line, which may hold an email
        continue;
      }
      try {
        data = KINDS[kind].parse(data);
      } catch (err) {
        refuse(lineNo, (err as Error).message);
        continue;
      }
      const task: Promise<void> = applyLine(lineNo, data).then(
        () => void inFlight.delete(task),
        (err: unknown) => {
          inFlight.delete(task);
          failure ??= err;
        },
      );
      inFlight.add(task);
      if (inFlight.size >= concurrency) await Promise.race(inFlight);
      if (failure) break;
    }
    await Promise.all(inFlight);
  } finally {
    lines.close();
    progress.stop();
  }
  if (failure) throw failure;
  return counts;
}
