import { COLLECTIONS, type CourseDoc, type GroupCourseDoc, type PublicCourseDoc } from '../../db/collections';
import { searchList } from '../../db/list-plan';
import { COURSE_SEARCH_FIELDS, courseGrams, searchTerms } from '../../db/search-index';
import type { Page, Tenant } from '../../db/tenant';
import { repairCourseFactsLater } from '../../domain/list-facts';
import { type Infer, toBoolean, toInteger } from '../../validation';
import { groupQueries } from '../groups/queries';
import { getOne, listPage } from '../queries';
import type { courseListQuerySchema, courseRefSchema, courseSchema } from './schema';

type Course = Infer<typeof courseSchema>;
type CourseRef = Infer<typeof courseRefSchema>;
type CourseListQuery = Infer<typeof courseListQuerySchema>;

/** Reads of the read-only `courses` resource (filled from LMS events by src/domain/courses.ts). */
export function courseQueries(tenant: Tenant) {
  const courses = tenant.collection<CourseDoc>(COLLECTIONS.courses);
  const links = tenant.collection<GroupCourseDoc>(COLLECTIONS.groupCourses);
  const publics = tenant.collection<PublicCourseDoc>(COLLECTIONS.publicCourses);

  /** Adds each course's public status and group links. */
  async function present(docs: CourseDoc[]): Promise<Course[]> {
    if (docs.length === 0) return [];
    const keys = docs.map((d) => d._id);
    const [publicByKey, courseLinks] = await Promise.all([
      publics.findByIds(keys, { projection: { id: 1 } }),
      links.findFew({ course: { $in: keys } }, { projection: { id: 1, course: 1, group: 1 } }),
    ]);
    // Read repair: a course whose derived facts disagree with what was just read (a writer died
    // between its write and its sync) is handed to the domain to derive again, after the answer.
    repairCourseFactsLater(
      tenant,
      docs
        .filter(
          (d) =>
            d.is_public !== undefined &&
            (d.is_public !== (publicByKey.has(d._id) ? 1 : 0) || d.linked !== (courseLinks.some((l) => l.course === d._id) ? 1 : 0)),
        )
        .map((d) => d._id),
    );
    const groups = await groupQueries(tenant).refs(courseLinks.map((l) => l.group));
    return docs.map((d) => {
      const record = publicByKey.get(d._id);
      return {
        id: d.id,
        name: d.name,
        public_status: record ? { is_public: true, id: record.id } : { is_public: false },
        group_links: courseLinks.filter((l) => l.course === d._id && groups.has(l.group)).map((l) => ({ id: l.id, group: groups.get(l.group)! })),
      };
    });
  }

  return {
    /**
     * Every filter is an index equality on the course (`is_public`, `linked`, derived in
     * src/domain/list-facts.ts), but `group`, whose courses are the group's links in course
     * order (`{org, group, course}`: a link's course is the course's id). A search is driven by
     * its rarest trigram, or by the group's links (src/db/list-plan.ts).
     */
    async list(page: Page, query: CourseListQuery): Promise<{ count: number; results: Course[] }> {
      const group = toInteger(query.group);
      const noGroup = toBoolean(query.no_group);
      const isPublic = toBoolean(query.is_public);
      if (group !== undefined && (group === 0 || noGroup === true)) return { count: 0, results: [] };
      // The `{org, is_public, linked, id}` index serves either equality alone with `$in` on the other.
      const filter: Record<string, unknown> = {};
      if (isPublic !== undefined || noGroup !== undefined) {
        filter.is_public = isPublic === undefined ? { $in: [0, 1] } : isPublic ? 1 : 0;
        filter.linked = noGroup === undefined ? { $in: [0, 1] } : noGroup ? 0 : 1;
      }
      const searching = searchTerms(query.search).length > 0;

      if (group === undefined && !searching) {
        return listPage(courses, page, filter, present);
      }
      const groupLinks = group === undefined ? undefined : { group };
      if (groupLinks && !searching && Object.keys(filter).length === 0) {
        // The group's links in course order are the list: count and page from the link index.
        const [count, keyDocs] = await Promise.all([
          links.count(groupLinks),
          links
            .find(groupLinks, { projection: { _id: 0, course: 1 } })
            .sort({ course: 1 })
            .skip(page.offset)
            .limit(page.limit)
            .toArray(),
        ]);
        const wanted = keyDocs.map((l) => l.course);
        const found = await courses.findByIds(wanted);
        // A link outlives its course only while a course deletion cascades: then the checked path.
        if (found.size === wanted.length) return { count, results: await present(wanted.map((k) => found.get(k)!)) };
      }
      const within = groupLinks && {
        size: await links.count(groupLinks),
        keys: async () => [...new Set((await links.find(groupLinks, { projection: { _id: 0, course: 1 } }).toArray()).map((l) => l.course))],
      };
      const { count, docs } = await searchList<CourseDoc, string>(
        { records: courses, grams: courseGrams(tenant), fields: COURSE_SEARCH_FIELDS, filter, within, gramsImplyFilter: Object.keys(filter).length === 0 },
        query.search,
        page,
      );
      return { count, results: await present(docs) };
    },

    get(key: string): Promise<Course | null> {
      return getOne(courses, { _id: key }, present);
    },

    /** `{id, name}` of each of `keys` that exists in this organization, for embedding in other resources. */
    async refs(keys: Iterable<string>): Promise<Map<string, CourseRef>> {
      const docs = await courses.findByIds(keys, { projection: { id: 1, name: 1 } });
      return new Map([...docs.values()].map((d) => [d._id, { id: d.id, name: d.name }]));
    },
  };
}
