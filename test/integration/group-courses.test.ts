// docs/api.md: group-course links: shapes and codes, a (course, group) pair linked once, references.
import { COLLECTIONS } from '../../src/db/collections';
import { beforeFirst } from '../helpers/domain';
import { client } from '../helpers/http';
import { expectRefusedWithoutWrites, seeder } from '../helpers/seed';
import { startTestService, type TestService } from '../helpers/stack';
import { siteAdminToken } from '../helpers/tokens';

let service: TestService;
const groupRef = (g: { id: number; name: string }) => ({ id: g.id, name: g.name });
let a: ReturnType<typeof client>;
let g1: { id: number; name: string };
let g2: { id: number; name: string };
const C1 = 'course-v1:ORG+ONE+2024';
const C2 = 'course-v1:ORG+TWO+2024';
const ref = (key: string) => ({ id: key, name: `Course ${key}` });

beforeAll(async () => {
  service = await startTestService();
  a = client(service.baseUrl, await siteAdminToken('org-a'));
  const seed = seeder(service.db, 'org-a');
  await seed.course(C1);
  await seed.course(C2);
  g1 = groupRef((await a.post('course-access-groups/', { name: 'One', description: '' })).body);
  g2 = groupRef((await a.post('course-access-groups/', { name: 'Two', description: '' })).body);
});
afterAll(() => service.close());

/** A 400 with `body`, and nothing written. */
const refused = (request: () => Promise<{ status: number; body: unknown }>, body: unknown) => expectRefusedWithoutWrites(service.db, request, 400, body);
const unique = { non_field_errors: ['The fields course, group must make a unique set.'] };

test('create, retrieve, list, PATCH and DELETE have the SPEC shapes and codes', async () => {
  const created = await a.post('group-courses/', { course: C1, group: g1.id });
  expect(created.status).toBe(201);
  expect(created.body).toEqual({ id: expect.any(Number), course: ref(C1), group: g1 });
  const id = created.body.id;
  expect((await a.get(`group-courses/${id}/`)).body).toEqual(created.body);
  expect((await a.get('group-courses/')).body).toEqual({ count: 1, next: null, previous: null, results: [created.body] });

  const moved = await a.patch(`group-courses/${id}/`, { group: g2.id });
  expect(moved.status).toBe(200);
  expect(moved.body).toEqual({ id, course: ref(C1), group: g2 });
  const both = await a.patch(`group-courses/${id}/`, { course: C2, group: g1.id });
  expect(both.body).toEqual({ id, course: ref(C2), group: g1 });
  expect((await a.get(`group-courses/${id}/`)).body).toEqual(both.body);
  expect((await a.patch(`group-courses/${id}/`, {})).body).toEqual(both.body);
  // One document for the link, under its id, whatever it joins (src/domain/by-id.ts).
  const raw = await service.db.collection('group_courses').find({ id }).toArray();
  expect(raw.map((d) => [d._id, d.course, d.group])).toEqual([[String(id), C2, g1.id]]);

  expect((await a.delete(`group-courses/${id}/`)).status).toBe(204);
  expect((await a.delete(`group-courses/${id}/`)).status).toBe(404);
  expect((await a.get('group-courses/')).body.count).toBe(0);
});

test('a (course, group) pair is linked once: a duplicate create or PATCH is a 400, nothing written', async () => {
  const first = (await a.post('group-courses/', { course: C1, group: g1.id })).body;
  const second = (await a.post('group-courses/', { course: C1, group: g2.id })).body;
  await refused(() => a.post('group-courses/', { course: C1, group: g1.id }), unique);
  await refused(() => a.patch(`group-courses/${second.id}/`, { group: g1.id }), unique);
  // The same course in another group, or another course in the group, is fine.
  const third = await a.post('group-courses/', { course: C2, group: g1.id });
  expect(third.status).toBe(201);
  for (const id of [first.id, second.id, third.body.id]) await a.delete(`group-courses/${id}/`);
});

test('validation and references: 400 on the field, nothing written', async () => {
  await refused(() => a.post('group-courses/', {}), { course: ['This field is required.'], group: ['This field is required.'] });
  await refused(() => a.post('group-courses/', { course: '', group: 'x' }), {
    course: ['This field may not be blank.'],
    group: ['A valid integer is required.'],
  });
  await refused(() => a.post('group-courses/', { course: 7, group: g1.id }), { course: ['Not a valid string.'] });
  await refused(() => a.post('group-courses/', { course: 'course-v1:ORG+NOPE+1', group: 4242 }), {
    course: ['Invalid pk "course-v1:ORG+NOPE+1" - object does not exist.'],
    group: ['Invalid pk "4242" - object does not exist.'],
  });
  const { body } = await a.post('group-courses/', { course: C1, group: g1.id });
  await refused(() => a.patch(`group-courses/${body.id}/`, { course: 'course-v1:ORG+NOPE+1' }), {
    course: ['Invalid pk "course-v1:ORG+NOPE+1" - object does not exist.'],
  });
  expect((await a.patch('group-courses/424242/', { course: 5 })).status).toBe(404);
  await a.delete(`group-courses/${body.id}/`);
});

// docs/event-core.md, "Children": a link or rule is written, then its group read again, so a
// deletion of the group that swept before the write is seen by the write (found by an attack
// of 8 links and 8 rules racing each group's deletion, which left orphans listed with no group).
test('a link or a rule written after its group’s deletion swept (its checks passed before) removes itself and is refused', async () => {
  const group = async () => (await a.post('course-access-groups/', { name: 'Doomed', description: '' })).body.id as number;
  const doomed = [await group(), await group(), await group()];
  const del = (id: number) => () => a.delete(`course-access-groups/${id}/`);

  const link = await beforeFirst('insertOne', COLLECTIONS.groupCourses, () => a.post('group-courses/', { course: C2, group: doomed[0] }), del(doomed[0]!));
  const rule = await beforeFirst(
    'insertOne',
    COLLECTIONS.rules,
    () => a.post('membership-rules/', { name: 'r', domain: 'doomed.org', group: doomed[1] }),
    del(doomed[1]!),
  );
  // A rule moved onto a group being deleted: applied, then taken by the deletion, as had it come first.
  const moved = (await a.post('membership-rules/', { name: 'm', domain: 'moved.org', group: g1.id })).body.id;
  const patch = await beforeFirst('findOneAndUpdate', COLLECTIONS.rules, () => a.patch(`membership-rules/${moved}/`, { group: doomed[2] }), del(doomed[2]!));

  expect([link.status, link.body]).toEqual([400, { group: [`Invalid pk "${doomed[0]}" - object does not exist.`] }]);
  expect([rule.status, rule.body]).toEqual([400, { group: [`Invalid pk "${doomed[1]}" - object does not exist.`] }]);
  expect(patch.status).toBe(200);
  const stored = async (name: string) =>
    (
      await service.db
        .collection(name)
        .find({ group: { $in: doomed } })
        .toArray()
    ).length;
  expect({ links: await stored(COLLECTIONS.groupCourses), rules: await stored(COLLECTIONS.rules) }).toEqual({ links: 0, rules: 0 });
  expect((await a.get(`membership-rules/${moved}/`)).status).toBe(404);
  expect((await a.get('group-courses/?limit=1000')).body.results.filter((l: { group: { id: number } }) => doomed.includes(l.group.id))).toEqual([]);
});
