import { createReadStream } from 'node:fs';
import { access } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import type { Db } from 'mongodb';
import { catalogInfoChanged } from '../../consumers/handlers/catalog-info-changed';
import { registrationCompleted } from '../../consumers/handlers/registration-completed';
import { Tenant } from '../db/tenant';
import { applyCatalogInfo, type CatalogInfoData } from '../domain/course-event-data';
import { type ApplyOutcome, normalizeEventTime } from '../domain/event-time';
import { importUserBatch, linesAt } from '../domain/import-users';
import { eventOrganization } from '../domain/organization';
import { applyUserData, type UserEventData, userFacts } from '../domain/user-event-data';
import { Invalid, ServiceError } from '../errors';
import { type ProgressCounts, progressReporter } from './progress';

/**
 * The `time` of every imported line. The files carry none, and an import describes the platform
 * as it was before the service listened: the epoch is older than any real event, so a real event
 * always wins over an imported line, and importing the same line again is a duplicate (no change).
 */
export const IMPORT_TIME = normalizeEventTime('1970-01-01T00:00:00Z');

export type ImportSummary = ProgressCounts;

/** The import cannot go on (no file, a file it cannot read): exit code 1. */
export class FatalImportError extends ServiceError {
  readonly retriable = false;
}

export interface ImportOptions {
  users?: string;
  courses?: string;
  /** Lines applied one by one at once (courses, and users the batch leaves to the per-event path). */
  concurrency?: number;
  /** Lines read, validated and applied together; one chunk is applied while the next is read, so memory stays flat. */
  chunkSize?: number;
  /** Progress, refused lines and the summary (stderr in the command). */
  out: NodeJS.WritableStream & { isTTY?: boolean };
}

/** A line that passed its schema, with its number for reports. */
interface Line<D> {
  lineNo: number;
  data: D;
}

/** What applying a chunk needs: the counts to move and how to refuse a line. */
interface ChunkContext {
  db: Db;
  concurrency: number;
  count(outcome: ApplyOutcome): void;
  refuse(lineNo: number, reason: string): void;
}

/** How one line of each file is validated and a chunk applied: the consumer's schemas and functions. */
const KINDS = {
  // A line is a registration: the user is upserted, and membership rules apply if it is active.
  users: {
    parse: (data: unknown) => withOrganization(registrationCompleted.parse(data).data as UserEventData),
    applyChunk: (ctx: ChunkContext, lines: Line<UserEventData>[]) => applyUsersChunk(ctx, lines),
  },
  // Courses are few: one by one, as events.
  courses: {
    parse: (data: unknown) => {
      const course = catalogInfoChanged.parse(data).data as CatalogInfoData;
      return { ...course, organization: eventOrganization(course.organization, { courseKey: course.catalog_info.course_key, defaultOrganization }) };
    },
    applyChunk: (ctx: ChunkContext, lines: Line<CatalogInfoData>[]) =>
      applyEachLine(ctx, lines, (data) => applyCatalogInfo(ctx.db, data, IMPORT_TIME, data.organization!)),
  },
} as const;

/** Lines that name no organization take DEFAULT_ORGANIZATION, as events do (a single-site LMS). */
const defaultOrganization = process.env.DEFAULT_ORGANIZATION || null;

/** The line with its organization resolved (src/domain/organization.ts): refused when it has none. */
const withOrganization = (data: UserEventData) => ({ ...data, organization: eventOrganization(data.organization, { defaultOrganization }) });

/**
 * Users of a chunk, organization by organization: new and already imported users in one batch
 * (importUserBatch), then every line the batch left (a user with other data, elsewhere, a
 * repeat, a tombstone) as an event, in file order. Both write what applying each line as a
 * registration event would.
 */
async function applyUsersChunk(ctx: ChunkContext, lines: Line<UserEventData>[]): Promise<void> {
  const perEvent: Line<UserEventData>[] = [];
  for (const [org, ofOrg] of byOrganization(lines)) {
    const outcomes = await importUserBatch(
      new Tenant(ctx.db, org),
      linesAt(
        ofOrg.map((l) => userFacts(l.data, 'registration')),
        IMPORT_TIME,
      ),
    );
    outcomes.forEach((outcome, i) => {
      if (outcome === 'per-event') perEvent.push(ofOrg[i]!);
      else ctx.count(outcome);
    });
  }
  perEvent.sort((x, y) => x.lineNo - y.lineNo);
  await applyEachLine(ctx, perEvent, (data) => applyUserData(ctx.db, data, IMPORT_TIME, 'registration', data.organization!));
}

function byOrganization(lines: Line<UserEventData>[]): Map<string, Line<UserEventData>[]> {
  const groups = new Map<string, Line<UserEventData>[]>();
  for (const line of lines) {
    const org = line.data.organization!; // resolved when the line was read
    const group = groups.get(org);
    if (group) group.push(line);
    else groups.set(org, [line]);
  }
  return groups;
}

/** Applies lines one by one, `ctx.concurrency` at once; a line the handler refuses is reported, a database failure thrown. */
async function applyEachLine<D>(ctx: ChunkContext, lines: Line<D>[], apply: (data: D) => Promise<ApplyOutcome>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < lines.length) {
      const { lineNo, data } = lines[next++]!;
      try {
        ctx.count(await apply(data));
      } catch (err) {
        if (!(err instanceof Invalid)) throw err; // the database failed: fatal, the import can be run again
        ctx.refuse(lineNo, err.message);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(ctx.concurrency, lines.length) }, worker));
}

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

export const DEFAULT_CHUNK_SIZE = 2000;

async function importFile(db: Db, kind: keyof typeof KINDS, path: string, opts: ImportOptions): Promise<ImportSummary> {
  const counts: ImportSummary = { read: 0, applied: 0, unchanged: 0, refused: 0 };
  const progress = progressReporter(opts.out, `${kind} ${path}`, () => counts);
  const ctx: ChunkContext = {
    db,
    concurrency: Math.max(1, opts.concurrency ?? 16),
    count: (outcome) => void (outcome === 'applied' ? counts.applied++ : counts.unchanged++),
    // Never an email or a line's content here: the line number and what is wrong with it.
    refuse: (lineNo, reason) => {
      counts.refused++;
      progress.note(`${path}:${lineNo}: refused: ${reason}`);
    },
  };
  const { parse, applyChunk } = KINDS[kind] as unknown as {
    parse(data: unknown): unknown;
    applyChunk(ctx: ChunkContext, lines: Line<unknown>[]): Promise<void>;
  };
  // One chunk is applied while the next is read and validated: two chunks in memory at most.
  let applying: Promise<void> = Promise.resolve();
  let failure: unknown = null;
  try {
    for await (const chunk of validLines(path, parse, Math.max(1, opts.chunkSize ?? DEFAULT_CHUNK_SIZE), counts, ctx.refuse)) {
      await applying;
      if (failure) break;
      // Caught at once: a failure while the next chunk is read must not be an unhandled rejection.
      applying = applyChunk(ctx, chunk).catch((err: unknown) => {
        failure ??= err;
      });
    }
    await applying;
  } finally {
    progress.stop();
  }
  if (failure) throw failure;
  return counts;
}

/** The file's lines that are JSON and pass `parse`, `size` at a time; the others are refused as they are read. */
async function* validLines<D>(
  path: string,
  parse: (data: unknown) => D,
  size: number,
  counts: ImportSummary,
  refuse: (lineNo: number, reason: string) => void,
): AsyncGenerator<Line<D>[]> {
  const lines = createInterface({ input: createReadStream(path, { encoding: 'utf8' }), crlfDelay: Infinity });
  let lineNo = 0;
  let chunk: Line<D>[] = [];
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
        chunk.push({ lineNo, data: parse(data) });
      } catch (err) {
        refuse(lineNo, (err as Error).message);
        continue;
      }
      if (chunk.length >= size) {
        yield chunk;
        chunk = [];
      }
    }
    if (chunk.length > 0) yield chunk;
  } finally {
    lines.close();
  }
}
