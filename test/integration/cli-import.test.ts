// Issue 7: `cag import` backfills users and courses through the consumer's schemas and domain functions.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { importFiles } from '../../src/cli/import';
import { client } from '../helpers/http';
import { snapshot } from '../helpers/seed';
import { MONGO_URL, startTestService, type TestService } from '../helpers/stack';
import { siteAdminToken } from '../helpers/tokens';

let service: TestService;
let a: ReturnType<typeof client>;
let dir: string;

const userLine = (id: number, email: string, is_active = true, organization = 'org-a') =>
  JSON.stringify({ user: { id, is_active, pii: { username: `u${id}`, email, name: `User ${id}` } }, organization });
const courseLine = (key: string, name: string, organization?: string) =>
  JSON.stringify({ catalog_info: { course_key: key, name }, ...(organization ? { organization } : {}) });

async function file(name: string, lines: string[]) {
  const path = join(dir, name);
  await writeFile(path, `${lines.join('\n')}\n`);
  return path;
}

/** Runs the import in this process; `out` collects what the command writes to stderr. */
async function runImport(opts: { users?: string; courses?: string }) {
  const out = new PassThrough();
  let text = '';
  out.on('data', (chunk) => (text += String(chunk)));
  const summary = await importFiles(service.db, { ...opts, concurrency: 4, out });
  return { summary, text };
}

/** Every collection but the id claims: an idempotent write may still claim (and waste) an id. */
/**
 * The stored data, without the id claims and the change sequence: a duplicate line re-announces
 * its record there (so caches read it again after a crash), which changes no data.
 */
async function data() {
  const { id_claims: _claims, change_log: _changes, ...rest } = await snapshot(service.db);
  return rest;
}

beforeAll(async () => {
  service = await startTestService();
  a = client(service.baseUrl, await siteAdminToken('org-a'));
  dir = await mkdtemp(join(tmpdir(), 'cag-import-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
  await service.close();
});

test('imported users and courses are visible through the REST API; a second import changes nothing', async () => {
  const users = await file('users.jsonl', [userLine(11, 'eleven@example.com'), userLine(12, 'twelve@example.com', false)]);
  const courses = await file('courses.jsonl', [courseLine('course-v1:org-a+C1+2024', 'One'), courseLine('other-key', 'Two', 'org-a')]);

  const first = await runImport({ users, courses });
  expect(first.summary).toEqual({ read: 4, applied: 4, unchanged: 0, refused: 0 });
  const listed = (await a.get('users/')).body;
  expect(listed.results.map((u: { id: number; username: string; name: string }) => [u.id, u.username, u.name])).toEqual([
    [11, 'u11', 'User 11'],
    [12, 'u12', 'User 12'],
  ]);
  // The REST API does not show is_active: the stored flag is the line's.
  const stored = await service.db
    .collection('users')
    .find({ org: 'org-a' }, { projection: { id: 1, is_active: 1 } })
    .sort({ id: 1 })
    .toArray();
  expect(stored.map((u) => [u.id, u.is_active])).toEqual([
    [11, true],
    [12, false],
  ]);
  expect((await a.get('courses/')).body.results.map((c: { id: string; name: string }) => [c.id, c.name])).toEqual([
    ['course-v1:org-a+C1+2024', 'One'],
    ['other-key', 'Two'],
  ]);

  const before = await data();
  const second = await runImport({ users, courses });
  expect(second.summary).toEqual({ read: 4, applied: 0, unchanged: 4, refused: 0 });
  expect(await data()).toEqual(before);
});

test('bad lines are reported by line number and reason; the good lines around them are imported', async () => {
  const users = await file('mixed.jsonl', [
    userLine(21, 'a21@example.com'),
    '{not json',
    '',
    JSON.stringify({ user: { id: 22, is_active: true }, organization: 'org-a' }),
    userLine(23, 'a23@example.com'),
  ]);
  const courses = await file('mixed-courses.jsonl', [courseLine('no-org-key', 'Orphan'), courseLine('course-v1:org-a+C2+2024', 'Two')]);
  const { summary, text } = await runImport({ users, courses });
  expect(summary).toEqual({ read: 6, applied: 3, unchanged: 0, refused: 3 });
  expect(text).toContain(`${users}:2: refused: not valid JSON`);
  expect(text).toMatch(new RegExp(`${users}:4: refused: .*must have required property 'pii'`));
  expect(text).toMatch(new RegExp(`${courses}:1: refused: no organization`));
  // Reasons never quote a line: no email reaches the output.
  expect(text).not.toContain('@example.com');
  const ids = (await a.get('users/')).body.results.map((u: { id: number }) => u.id);
  expect(ids).toEqual(expect.arrayContaining([21, 23]));
  expect(ids).not.toContain(22);
  expect((await a.get('courses/course-v1:org-a+C2+2024/')).status).toBe(200);
});

test('an imported active user matching a membership rule joins its group; an inactive one does not', async () => {
  const group = (await a.post('course-access-groups/', { name: 'Partners', description: '' })).body;
  expect((await a.post('membership-rules/', { name: 'p', domain: 'partner.org', group: group.id })).status).toBe(201);
  const users = await file('rules.jsonl', [userLine(31, 'x@Partner.ORG'), userLine(32, 'y@partner.org', false), userLine(33, 'z@elsewhere.org')]);
  await runImport({ users });
  const members = (await a.get('memberships/')).body.results.map((m: { user: { id: number }; group: { id: number } }) => [m.user.id, m.group.id]);
  expect(members).toEqual([[31, group.id]]);
  expect(await service.db.collection<{ _id: string }>('memberships').findOne({ _id: '31' })).toMatchObject({ automatic: true });
});

test('the `cag` program imports into the database MONGO_DB names and exits 0; a missing file exits 1', async () => {
  const users = await file('child.jsonl', [userLine(41, 'child@example.com')]);
  const run = (args: string[]) =>
    new Promise<{ code: number; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [join(__dirname, '../../bin/cag.js'), ...args],
        { env: { ...process.env, MONGO_URL, MONGO_DB: service.config.MONGO_DB, LOG_LEVEL: 'silent' } },
        (err, _stdout, stderr) => resolve({ code: err ? Number(err.code) : 0, stderr }),
      );
    });
  const ok = await run(['import', '--users', users]);
  expect(ok).toEqual({ code: 0, stderr: expect.stringContaining('read 1, applied 1, unchanged 0, refused 0') });
  expect((await a.get('users/41/')).status).toBe(200);
  const missing = await run(['import', '--users', join(dir, 'absent.jsonl')]);
  expect(missing.code).toBe(1);
  expect(missing.stderr).toContain('cannot read');
});
