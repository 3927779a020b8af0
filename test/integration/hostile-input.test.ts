// Issue 6 part B, docs/api.md (bad input is a clear 400/404/413 in the contract's shape and nothing
// written; never a 5xx): oversized and odd input. Long search strings, emoji and right-to-left
// names (lengths counted in code points, as DRF/Python counts them), NUL bytes, numbers as strings
// and strings as numbers, ids beyond 2^53, deep nesting, duplicate keys, a body one byte over
// 1 MiB, invalid UTF-8, and `__proto__`/`constructor` keys (no prototype pollution in the
// service's process, which runs in this one).
import { MAX_BODY_BYTES } from '../../src/http/body';
import { makeWorld, type World } from '../helpers/fixtures';
import { API, client, type Reply } from '../helpers/http';
import { snapshot } from '../helpers/seed';
import { startTestService, type TestService } from '../helpers/stack';
import { serviceToken, siteAdminToken } from '../helpers/tokens';

let service: TestService;
let a: ReturnType<typeof client>;
let bearer: string;
let wa: World;
let tried = 0;

beforeAll(async () => {
  service = await startTestService();
  bearer = await siteAdminToken('org-a');
  a = client(service.baseUrl, bearer);
  wa = await makeWorld(service, a, 'org-a', 1);
});
afterAll(async () => {
  // eslint-disable-next-line no-console
  console.log(`hostile-input: ${tried} oversized or odd inputs`);
  await service.close();
});

/** Sends raw bytes as the body, for what a JS string cannot carry (invalid UTF-8). */
async function raw(method: string, path: string, body: Uint8Array | string): Promise<Reply> {
  const res = await fetch(`${service.baseUrl}${API}/${path}`, {
    method,
    headers: { Authorization: `Bearer ${bearer}`, 'Content-Type': 'application/json' },
    body,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers };
}

/** DRF's error shapes: {"detail": "..."} or {"<field>": ["<message>", ...]}. */
function expectErrorShape(body: unknown): void {
  expect(body).toEqual(expect.any(Object));
  const entries = Object.entries(body as object);
  const ok =
    (entries.length === 1 && entries[0]![0] === 'detail' && typeof entries[0]![1] === 'string') ||
    (entries.length > 0 && entries.every(([, v]) => Array.isArray(v) && v.every((m) => typeof m === 'string')));
  expect({ body, shaped: ok }).toEqual({ body, shaped: true });
}

/** Sends one hostile request: never a 5xx; a refusal is in the contract's shape and writes nothing. */
async function refusedOrAnswered(send: () => Promise<Reply>, expected?: number, canWrite = true): Promise<Reply> {
  // A GET cannot write (the command-level proof is in hostile-injection.test.ts): snapshots only around writes, to keep the file fast.
  const before = canWrite ? await snapshot(service.db) : undefined;
  const res = await send();
  tried += 1;
  expect({ status: res.status, body: res.body, serverError: res.status >= 500 }).toEqual({ status: res.status, body: res.body, serverError: false });
  if (expected !== undefined) expect({ status: res.status, body: res.body }).toEqual({ status: expected, body: res.body });
  if (res.status >= 400) {
    expectErrorShape(res.body);
    if (before) expect(await snapshot(service.db)).toEqual(before);
  }
  return res;
}

describe('lengths: names count code points, as DRF does', () => {
  const emoji = '😀'; // one code point, two UTF-16 code units
  test.each([
    ['32 emoji (64 UTF-16 units)', emoji.repeat(32)],
    ['right-to-left text with marks', 'שָׁלוֹם עולם مرحبا بالعالم ‏RTL‏'],
    ['a family emoji (ZWJ sequence) and flags', '👨‍👩‍👧‍👦 🇮🇱🇪🇬'],
    ['combining characters', 'e\u0301'.repeat(16)],
  ])('accepted and returned byte for byte: %s', async (_name, name) => {
    expect([...name].length).toBeLessThanOrEqual(32);
    const created = await refusedOrAnswered(() => a.post('course-access-groups/', { name, description: name }), 201);
    expect(created.body.name).toBe(name);
    const read = await a.get(`course-access-groups/${created.body.id}/`);
    expect(Buffer.from(read.body.name, 'utf8').equals(Buffer.from(name, 'utf8'))).toBe(true);
    expect((await a.delete(`course-access-groups/${created.body.id}/`)).status).toBe(204);
  });

  test('33 code points are refused, naming the field', async () => {
    const res = await refusedOrAnswered(() => a.post('course-access-groups/', { name: '😀'.repeat(33), description: '' }), 400);
    expect(res.body).toEqual({ name: ['Ensure this field has no more than 32 characters.'] });
  });
});

describe('NUL bytes, long and odd strings', () => {
  test.each([
    ['a NUL in a name', { name: 'a\u0000b', description: '' }],
    ['a NUL alone', { name: '\u0000', description: '\u0000' }],

    ['a 10,000-character name', { name: 'x'.repeat(10_000), description: '' }],
  ])('group with %s: a 400 or stored literally', async (_name, body) => {
    const res = await refusedOrAnswered(() => a.post('course-access-groups/', body));
    if (res.status === 201) {
      expect((await a.get(`course-access-groups/${res.body.id}/`)).body.name).toBe(res.body.name);
      await a.delete(`course-access-groups/${res.body.id}/`);
    }
  });

  test.each(['users/', 'courses/'])('%s search: 10,000 characters, NUL bytes, operators as text', async (list) => {
    for (const search of ['x'.repeat(10_000), 'a\u0000b', '\u0000', '%00', '.*\u0000', 'user1001\u0000']) {
      const res = await refusedOrAnswered(() => a.get(`${list}?search=${encodeURIComponent(search)}`), undefined, false);
      if (res.status === 200) expect(res.body.count).toBe(0);
    }
  });
});

describe("numbers and strings in each other's places; ids beyond 2^53", () => {
  const huge = ['9007199254740993', '18446744073709551616', '1e400', '99999999999999999999999999'];

  test.each(huge)('path id %s is a 404 on every item path', async (id) => {
    for (const resource of ['course-access-groups', 'group-courses', 'public-courses', 'memberships', 'membership-rules', 'users']) {
      await refusedOrAnswered(() => a.get(`${resource}/${id}/`), 404, false);
      if (resource === 'users') continue; // read-only: DELETE and PATCH are a 405 before the id is read
      await refusedOrAnswered(() => a.delete(`${resource}/${id}/`), 404);
      if (resource !== 'public-courses') await refusedOrAnswered(() => a.patch(`${resource}/${id}/`, { name: 'x' }), 404);
    }
  });

  test('ids beyond 2^53 in bodies are a 400 (JSON numbers and strings alike)', async () => {
    // biome-ignore lint/correctness/noPrecisionLoss: deliberate: the literal becomes 2^53, the first integer past the safe range
    for (const big of [9007199254740993, 2 ** 64, 1e300, '9007199254740993', -1, 0, 1.5, true]) {
      await refusedOrAnswered(() => a.post('memberships/', { user: wa.freeUserId, group: big }), 400);
      await refusedOrAnswered(() => a.post('memberships/', { user: big, group: wa.groupId }), 400);
      await refusedOrAnswered(() => a.post('group-courses/', { course: wa.freeCourseKey, group: big }), 400);
    }
    const s = client(service.baseUrl, await serviceToken());
    // biome-ignore lint/correctness/noPrecisionLoss: deliberate: the literal becomes 2^53, the first integer past the safe range
    for (const big of [9007199254740993, 2 ** 64, '9007199254740993']) {
      await refusedOrAnswered(() => s.post('access/batch/', { action: 'course.enroll', user_id: big, course_ids: [wa.courseKey] }), 400);
    }
  });

  test('ids beyond 2^53 in query strings: a 400 or an empty answer', async () => {
    const s = client(service.baseUrl, await serviceToken());
    for (const big of ['9007199254740993', '18446744073709551616', '-1', '1.0', '1e3']) {
      await refusedOrAnswered(() => a.get(`memberships/?group=${big}`), undefined, false);
      await refusedOrAnswered(() => a.get(`course-access-groups/?limit=${big}&offset=${big}`), undefined, false);
      const access = await refusedOrAnswered(
        () => s.get(`access/?course_id=${encodeURIComponent(wa.courseKey)}&action=course.enroll&user_id=${big}`),
        undefined,
        false,
      );
      expect(access.status).toBe(400);
    }
  });

  test('a string where a number belongs, a number where a string belongs', async () => {
    const res = await refusedOrAnswered(() => a.post('memberships/', { user: String(wa.freeUserId), group: String(wa.groupId) }));
    // DRF's PrimaryKeyRelatedField accepts "12" as 12; a 400 would also be in the shape.
    if (res.status === 201) await a.delete(`memberships/${res.body.id}/`);
    const named = await refusedOrAnswered(() => a.post('course-access-groups/', { name: 12345, description: '' }));
    if (named.status === 201) {
      expect(named.body.name).toBe('12345');
      await a.delete(`course-access-groups/${named.body.id}/`);
    }
    await refusedOrAnswered(() => a.post('public-courses/', { course: 42 }));
  });
});

describe('JSON edge cases', () => {
  test('100,000 levels of nesting within 1 MiB: refused, and the process lives on', async () => {
    const depth = 100_000;
    for (const body of [
      `${'['.repeat(depth)}${']'.repeat(depth)}`,
      `{"name":${'['.repeat(depth)}${']'.repeat(depth)}}`,
      `{"name":"x","description":"","extra":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}`,
    ]) {
      expect(Buffer.byteLength(body)).toBeLessThanOrEqual(MAX_BODY_BYTES);
      const res = await refusedOrAnswered(() => raw('POST', 'course-access-groups/', body));
      if (res.status === 201) await a.delete(`course-access-groups/${res.body.id}/`);
    }
    expect((await a.get('course-access-groups/')).status).toBe(200);
  });

  test("duplicate keys: the last one counts, as Python's json does", async () => {
    const res = await refusedOrAnswered(() => raw('POST', 'course-access-groups/', '{"name":"first","name":"second","description":""}'), 201);
    expect(res.body.name).toBe('second');
    await a.delete(`course-access-groups/${res.body.id}/`);
  });

  test('valid JSON of 1 MiB + 1 byte is a 413', async () => {
    const head = '{"name":"x","description":"","pad":"';
    const body = `${head}${'a'.repeat(MAX_BODY_BYTES + 1 - head.length - 2)}"}`;
    expect(Buffer.byteLength(body)).toBe(MAX_BODY_BYTES + 1);
    const res = await refusedOrAnswered(() => raw('POST', 'course-access-groups/', body), 413);
    expect(res.body).toEqual({ detail: expect.any(String) });
  });

  test('invalid UTF-8 is a 400 parse error, as DRF answers, not a name full of U+FFFD', async () => {
    for (const bytes of [
      [0xff, 0xfe],
      [0xc3, 0x28],
      [0xe2, 0x28, 0xa1],
      [0xed, 0xa0, 0x80],
    ]) {
      const body = Buffer.concat([Buffer.from('{"name":"a'), Buffer.from(bytes), Buffer.from('","description":""}')]);
      await refusedOrAnswered(() => raw('POST', 'course-access-groups/', body), 400);
    }
  });

  test('a lone surrogate (\\ud800) is a 400: it cannot be stored as UTF-8, so a 201 would echo a name the database does not hold', async () => {
    for (const body of ['{"name":"a\\ud800","description":""}', '{"name":"x","description":"\\udfff"}', '{"name":"x","description":"","\\ud800":1}']) {
      const res = await refusedOrAnswered(() => raw('POST', 'course-access-groups/', body), 400);
      expect(res.body).toEqual({ detail: expect.stringContaining('JSON parse error') });
    }
    // A proper pair written as escapes is one emoji and is accepted.
    const pair = await refusedOrAnswered(() => raw('POST', 'course-access-groups/', '{"name":"\\ud83d\\ude00","description":""}'), 201);
    expect(pair.body.name).toBe('😀');
    await a.delete(`course-access-groups/${pair.body.id}/`);
  });

  test('__proto__ and constructor keys pollute nothing, in bodies and query strings', async () => {
    const bodies = [
      '{"__proto__":{"polluted":"yes"},"name":"proto","description":""}',
      '{"constructor":{"prototype":{"polluted":"yes"}},"name":"ctor","description":""}',
      '{"name":"x","description":"","__proto__":{"isStaff":true,"org":"org-b"}}',
    ];
    for (const body of bodies) {
      const res = await refusedOrAnswered(() => raw('POST', 'course-access-groups/', body));
      if (res.status === 201) {
        expect(Object.keys(res.body).sort()).toEqual(['description', 'id', 'name']);
        await a.delete(`course-access-groups/${res.body.id}/`);
      }
      await refusedOrAnswered(() => raw('PATCH', `course-access-groups/${wa.groupId}/`, body.replace(/"name":"[a-z]+",/, '')));
      await refusedOrAnswered(() => raw('PATCH', 'site-configuration/', '{"__proto__":{"polluted":"yes"}}'));
    }
    for (const q of ['__proto__[polluted]=yes', '__proto__.polluted=yes', 'constructor[prototype][polluted]=yes', '__proto__=x']) {
      await refusedOrAnswered(() => a.get(`course-access-groups/?${q}`), undefined, false);
      await refusedOrAnswered(() => a.get(`users/?${q}`), undefined, false);
    }
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
    expect((Object.prototype as { isStaff?: unknown }).isStaff).toBeUndefined();
    expect((await a.get(`course-access-groups/${wa.groupId}/`)).body.name).toBe('Group of org-a');
  });
});
