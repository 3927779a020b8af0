import type { client } from './http';
import { seeder } from './seed';
import type { TestService } from './stack';

export type Client = ReturnType<typeof client>;

/** One organization with one record of every kind, made through the API (users and courses seeded). */
export interface World {
  org: string;
  userId: number;
  freeUserId: number;
  courseKey: string;
  freeCourseKey: string;
  groupId: number;
  membershipId: number;
  groupCourseId: number;
  publicCourseId: number;
  ruleId: number;
  domain: string;
}

/** `base` keeps the ids of two worlds apart (users 1000·base + n, course keys with the org). */
export async function makeWorld(service: TestService, http: Client, org: string, base: number): Promise<World> {
  const seed = seeder(service.db, org);
  const userId = base * 1000 + 1;
  const freeUserId = base * 1000 + 2;
  await seed.user(userId);
  await seed.user(freeUserId);
  const courseKey = `course-v1:${org}+C1+2024`;
  const freeCourseKey = `course-v1:${org}+C2+2024`;
  await seed.course(courseKey, `Course one of ${org}`);
  await seed.course(freeCourseKey, `Course two of ${org}`);
  const ok = <T>(res: { status: number; body: T }, status = 201): T => {
    if (res.status !== status) throw new Error(`fixture request failed: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };
  const group = ok(await http.post('course-access-groups/', { name: `Group of ${org}`, description: '' }));
  const membership = ok(await http.post('memberships/', { user: userId, group: group.id }));
  const link = ok(await http.post('group-courses/', { course: courseKey, group: group.id }));
  const record = ok(await http.post('public-courses/', { course: courseKey }));
  const domain = `${org}.example.com`;
  const rule = ok(await http.post('membership-rules/', { name: 'Rule', domain, group: group.id }));
  return {
    org,
    userId,
    freeUserId,
    courseKey,
    freeCourseKey,
    groupId: group.id,
    membershipId: membership.id,
    groupCourseId: link.id,
    publicCourseId: record.id,
    ruleId: rule.id,
    domain,
  };
}
