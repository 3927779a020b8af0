import { COLLECTIONS, type GroupCourseDoc } from '../../db/collections';
import { isDuplicateKey } from '../../db/driver-errors';
import { getOne, hasOne, listPage, type Page } from '../../db/records';
import type { Tenant } from '../../db/tenant';
import { syncCourseFacts } from '../../domain/list-facts';
import { Conflict, doesNotExist, type FieldErrors, Invalid } from '../../errors';
import type { Infer } from '../../validation';
import { coursesRepository } from '../courses/repository';
import { groupsRepository } from '../groups/repository';
import type { groupCourseCreateSchema, groupCoursePatchSchema, groupCourseSchema } from './schema';

export type GroupCourse = Infer<typeof groupCourseSchema>;

/** A (course, group) link is unique: it is the document's `_id`. */
const linkKey = (course: string, group: number) => `${course}|${group}`;
const notUnique = () => new Conflict({ non_field_errors: ['The fields course, group must make a unique set.'] });

export function groupCoursesRepository(tenant: Tenant) {
  const links = tenant.collection<GroupCourseDoc>(COLLECTIONS.groupCourses);

  /** Adds the course and group; a reference whose record a cascade is removing shows blank. */
  async function present(docs: GroupCourseDoc[]): Promise<GroupCourse[]> {
    const [courses, groups] = await Promise.all([
      coursesRepository(tenant).refs(docs.map((d) => d.course)),
      groupsRepository(tenant).refs(docs.map((d) => d.group)),
    ]);
    return docs.map((d) => ({
      id: d.id,
      course: courses.get(d.course) ?? { id: d.course, name: '' },
      group: groups.get(d.group) ?? { id: d.group, name: '' },
    }));
  }

  /** 400 on `course` and/or `group` when they are given and unknown in this organization. */
  async function checkReferences(input: { course?: string; group?: number }) {
    const errors: FieldErrors = {};
    const [courseOk, groupOk] = await Promise.all([
      input.course === undefined || coursesRepository(tenant).exists(input.course),
      input.group === undefined || groupsRepository(tenant).exists(input.group),
    ]);
    if (!courseOk) errors.course = [doesNotExist(input.course)];
    if (!groupOk) errors.group = [doesNotExist(input.group)];
    if (Object.keys(errors).length > 0) throw new Invalid(errors);
  }

  /** Inserts a link, refusing an existing (course, group) pair with DRF's unique-together 400. */
  async function insert(doc: Omit<GroupCourseDoc, 'org'>): Promise<GroupCourseDoc> {
    try {
      return await links.insertOne(doc);
    } catch (err) {
      if (isDuplicateKey(err)) throw notUnique();
      throw err;
    }
  }

  return {
    list(page: Page): Promise<{ count: number; results: GroupCourse[] }> {
      return listPage(links, page, {}, present);
    },

    get(id: number): Promise<GroupCourse | null> {
      return getOne(links, { id }, present);
    },

    exists(id: number): Promise<boolean> {
      return hasOne(links, { id });
    },

    async create(input: Infer<typeof groupCourseCreateSchema>): Promise<GroupCourse> {
      await checkReferences(input);
      const _id = linkKey(input.course, input.group);
      // Checked first so that a refused request claims no id.
      if (await hasOne(links, { _id })) throw notUnique();
      const id = await tenant.nextId('group_courses');
      const doc = await insert({ _id, id, course: input.course, group: input.group });
      await syncCourseFacts(tenant, [doc.course]);
      return (await present([doc]))[0]!;
    },

    /**
     * A link's `_id` is its (course, group) pair, so changing either inserts the new document
     * (refused when that pair exists) and then deletes the old one: a crash in between leaves
     * both, with one id, until the next PATCH or DELETE of that id.
     */
    async update(id: number, patch: Infer<typeof groupCoursePatchSchema>): Promise<GroupCourse | null> {
      await checkReferences(patch);
      const old = await links.findOne({ id });
      if (!old) return null;
      const course = patch.course ?? old.course;
      const group = patch.group ?? old.group;
      const _id = linkKey(course, group);
      if (_id === old._id) return (await present([old]))[0]!;
      const doc = await insert({ _id, id, course, group });
      await links.deleteMany({ id, _id: { $ne: _id } });
      await syncCourseFacts(tenant, [old.course, course]);
      return (await present([doc]))[0]!;
    },

    /** Deletes every document of the id (normally one; two after an interrupted PATCH). */
    async delete(id: number): Promise<boolean> {
      const courses = (await links.find({ id }, { projection: { course: 1 } }).toArray()).map((l) => l.course);
      const deleted = (await links.deleteMany({ id })).deletedCount > 0;
      await syncCourseFacts(tenant, courses);
      return deleted;
    },
  };
}

export type GroupCoursesRepository = ReturnType<typeof groupCoursesRepository>;
