import { COLLECTIONS, type CourseDoc, type GroupCourseDoc, type PublicCourseDoc } from '../../db/collections';
import type { Tenant } from '../../db/tenant';
import { getOne, hasOne, listPage, type Page } from '../../db/records';
import { searchFilter } from '../../db/search';
import { toBoolean, toInteger, type Infer } from '../../validation';
import { groupsRepository } from '../groups/repository';
import type { courseListQuerySchema, courseRefSchema, courseSchema } from './schema';

export type Course = Infer<typeof courseSchema>;
export type CourseRef = Infer<typeof courseRefSchema>;
export type CourseListQuery = Infer<typeof courseListQuerySchema>;

/** MongoDB orders strings by their UTF-8 bytes; so does this. */
const byKey = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

export function coursesRepository(tenant: Tenant) {
  const courses = tenant.collection<CourseDoc>(COLLECTIONS.courses);
  const links = tenant.collection<GroupCourseDoc>(COLLECTIONS.groupCourses);
  const publics = tenant.collection<PublicCourseDoc>(COLLECTIONS.publicCourses);

  /** Adds each course's public status and group links. */
  async function present(docs: CourseDoc[]): Promise<Course[]> {
    if (docs.length === 0) return [];
    const keys = docs.map((d) => d._id);
    const [publicByKey, courseLinks] = await Promise.all([
      publics.findByIds(keys, { projection: { id: 1 } }),
      links.find({ course: { $in: keys } }, { projection: { id: 1, course: 1, group: 1 } }).sort({ id: 1 }).toArray(),
    ]);
    const groups = await groupsRepository(tenant).refs(courseLinks.map((l) => l.group));
    return docs.map((d) => {
      const record = publicByKey.get(d._id);
      return {
        id: d.id,
        name: d.name,
        public_status: record ? { is_public: true, id: record.id } : { is_public: false },
        group_links: courseLinks
          .filter((l) => l.course === d._id && groups.has(l.group))
          .map((l) => ({ id: l.id, group: groups.get(l.group)! })),
      };
    });
  }

  const keysOf = async (cursor: Promise<{ course: string }[]>) => new Set((await cursor).map((d) => d.course));

  return {
    /**
     * The filters narrow the course keys through the link and public-record collections. When
     * they name a key set and there is no search, the page is read by key: sorted keys, then one
     * `_id` lookup per course of the page (the only lookup FerretDB v1 plans).
     */
    async list(page: Page, query: CourseListQuery): Promise<{ count: number; results: Course[] }> {
      const group = toInteger(query.group);
      const noGroup = toBoolean(query.no_group);
      const isPublic = toBoolean(query.is_public);
      let include: Set<string> | null = null;
      const exclude = new Set<string>();
      const narrow = (keys: Set<string>) => {
        include = include === null ? keys : new Set([...include].filter((k) => keys.has(k)));
      };
      if (group !== undefined) {
        narrow(await keysOf(links.find({ group }, { projection: { course: 1 } }).toArray()));
      }
      if (noGroup !== undefined) {
        const linked = await keysOf(links.find({}, { projection: { course: 1 } }).toArray());
        if (noGroup) {
          for (const k of linked) exclude.add(k);
        }
        else narrow(linked);
      }
      if (isPublic !== undefined) {
        const open = await keysOf(publics.find({}, { projection: { course: 1 } }).toArray());
        if (isPublic) narrow(open);
        else {
          for (const k of open) exclude.add(k);
        }
      }
      const included = include as Set<string> | null;
      const search = searchFilter(['id', 'name'], query.search);

      if (included !== null && Object.keys(search).length === 0) {
        const keys = [...included].filter((k) => !exclude.has(k)).sort(byKey);
        const wanted = keys.slice(page.offset, page.offset + page.limit);
        const [count, found] = await Promise.all([
          courses.countDocuments({ _id: { $in: keys } }),
          courses.findByIds(wanted),
        ]);
        // Every key has its course (a link or public record outlives its course only while the
        // deletion event cascades): the page is those courses. Otherwise the query below.
        if (count === keys.length && found.size === wanted.length) {
          return { count, results: await present(wanted.map((k) => found.get(k)!)) };
        }
      }

      const filter: Record<string, unknown> = { ...search };
      if (included !== null) filter._id = { $in: [...included].filter((k) => !exclude.has(k)) };
      else if (exclude.size > 0) filter._id = { $nin: [...exclude] };
      return listPage(courses, page, filter, present);
    },

    get(key: string): Promise<Course | null> {
      return getOne(courses, { _id: key }, present);
    },

    exists(key: string): Promise<boolean> {
      return hasOne(courses, { _id: key });
    },

    /** `{id, name}` of each of `keys` that exists in this organization, for embedding in other resources. */
    async refs(keys: Iterable<string>): Promise<Map<string, CourseRef>> {
      const docs = await courses.findByIds(keys, { projection: { id: 1, name: 1 } });
      return new Map([...docs.values()].map((d) => [d._id, { id: d.id, name: d.name }]));
    },
  };
}

export type CoursesRepository = ReturnType<typeof coursesRepository>;
