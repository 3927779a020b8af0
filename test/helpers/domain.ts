import { Collection, type Db } from 'mongodb';
import { COLLECTIONS, type CourseDoc, ensureIndexes, type GroupCourseDoc, type MembershipDoc, type RuleDoc, type UserDoc } from '../../src/db/collections';
import { Tenant } from '../../src/db/tenant';
import { normalizeEventTime } from '../../src/domain/event-time';
import { createGroupCourse } from '../../src/domain/group-courses';
import { createGroup } from '../../src/domain/groups';
import type { UserFacts } from '../../src/domain/learners';
import { createRule } from '../../src/domain/membership-rules';
import { importMembership } from '../../src/domain/memberships';
import { memoryDb } from './memory-db';

/**
 * The domain unit tests' world: a fresh in-memory database with the service's indexes, and
 * tenants on it. Groups, rules and links are made by the domain's functions, as the admin API
 * makes them; users and courses by the domain's event functions in each test.
 */
export async function memoryWorld(): Promise<{ db: Db; tenant: (org: string) => Tenant }> {
  const db = memoryDb();
  await ensureIndexes(db);
  return { db, tenant: (org) => new Tenant(db, org) };
}

/** An event time on day `day` of July 2026, as stored (normalized). */
export const day = (d: number) => normalizeEventTime(`2026-07-${String(d).padStart(2, '0')}T00:00:00Z`);

/** A user as an event describes it: active, `user<id>@<domain>`. */
export const facts = (id: number, over: Partial<UserFacts> & { domain?: string } = {}): UserFacts => {
  const { domain = 'example.com', ...rest } = over;
  return { id, username: `user${id}`, name: `User ${id}`, email: `user${id}@${domain}`, is_active: true, ...rest };
};

export const newGroup = async (tenant: Tenant, name = 'Group') => (await createGroup(tenant, { name, description: '' })).id;

/** A rule putting users of `domain` into `group`. */
export const addRule = (tenant: Tenant, domain: string, group: number) => createRule(tenant, { name: `rule ${domain}`, domain, group });

/** A group and a rule putting `domain` into it; returns the group's id. */
export async function groupWithRule(tenant: Tenant, domain: string): Promise<number> {
  const group = await newGroup(tenant, `Group ${domain}`.slice(0, 32));
  await addRule(tenant, domain, group);
  return group;
}

export const link = (tenant: Tenant, course: string, group: number) => createGroupCourse(tenant, { course, group });

export const userOf = (tenant: Tenant, id: number) => tenant.collection<UserDoc>(COLLECTIONS.users).findById(String(id));
export const courseOf = (tenant: Tenant, key: string) => tenant.collection<CourseDoc>(COLLECTIONS.courses).findById(key);
export const membershipOf = (tenant: Tenant, user: number) => tenant.collection<MembershipDoc>(COLLECTIONS.memberships).findById(String(user));
export const memberships = (tenant: Tenant) => tenant.collection<MembershipDoc>(COLLECTIONS.memberships).find({}).sort({ user: 1 }).toArray();
export const rules = (tenant: Tenant) => tenant.collection<RuleDoc>(COLLECTIONS.rules).find({}).sort({ id: 1 }).toArray();
export const links = (tenant: Tenant) => tenant.collection<GroupCourseDoc>(COLLECTIONS.groupCourses).find({}).sort({ id: 1 }).toArray();

/** What `dieAfter` throws: the process stopped right after its write. */
export class ProcessDied extends Error {}

/**
 * The tenant, with `hook` run just before its first call of `method` (an `insertMany` by
 * default) on `collectionName`: the moment another request or event (another process) lands
 * between a step's reads and its writes. `dieAfter` n: the n-th call (1: that first one), once
 * written, throws ProcessDied, as a process killed right after its write leaves what it wrote.
 */
export function withHookBefore(tenant: Tenant, collectionName: string, hook: () => Promise<void>, method = 'insertMany', dieAfter = 0): Tenant {
  const collection = tenant.collection.bind(tenant);
  let fired = false;
  let calls = 0;
  const hooked = Object.create(tenant) as Tenant;
  hooked.collection = ((name: string) => {
    const real = collection(name as never);
    if (name !== collectionName) return real;
    return new Proxy(real, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver);
        if (prop !== method || typeof value !== 'function') return typeof value === 'function' ? value.bind(target) : value;
        return async (...args: unknown[]) => {
          calls++;
          if (!fired) {
            fired = true;
            await hook();
          }
          const result = await (value as (...a: unknown[]) => unknown).apply(target, args);
          if (calls === dieAfter) throw new ProcessDied();
          return result;
        };
      },
    });
  }) as Tenant['collection'];
  return hooked;
}

/**
 * Gives user `user` a membership unless they have one (an administrator's, or a rule's with
 * `automatic`): the membership, or null when they have one or are not a learner of the tenant.
 */
export async function giveMembership(tenant: Tenant, input: { user: number; group: number; automatic: boolean }): Promise<MembershipDoc | null> {
  return (await importMembership(tenant, input)) ? membershipOf(tenant, input.user) : null;
}

/**
 * Runs `apply`, and `meanwhile` right before its first `method` call on `collectionName` (the
 * driver's, whatever module makes it): another process landing at that moment.
 */
export async function beforeFirst<T>(
  method: 'insertMany' | 'insertOne' | 'findOneAndUpdate' | 'findOne' | 'updateOne' | 'findOneAndDelete',
  collectionName: string,
  apply: () => Promise<T>,
  meanwhile: () => Promise<unknown>,
): Promise<T> {
  const original = Collection.prototype[method] as (...a: unknown[]) => Promise<unknown>;
  let fired = false;
  const spy = jest.spyOn(Collection.prototype, method).mockImplementation(async function (this: Collection, ...args: unknown[]) {
    if (!fired && this.collectionName === collectionName) {
      fired = true;
      await meanwhile();
    }
    return original.apply(this, args);
  } as never);
  try {
    return await apply();
  } finally {
    spy.mockRestore();
    expect(fired).toBe(true);
  }
}
