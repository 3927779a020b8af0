import { Invalid } from '../errors';
import { orgFromCourseKey } from './courses';

/**
 * The organization of an event (docs/events.md): the one its data names; else, for a course,
 * the ORG of `course-v1:ORG+NUM+RUN`; else DEFAULT_ORGANIZATION (a single-site LMS). Without any
 * the event can never be applied: Invalid, which the consumer dead-letters ("no organization").
 */
export function eventOrganization(named: string | undefined, fallback: { courseKey?: string; defaultOrganization: string | null }): string {
  const org = named ?? (fallback.courseKey === undefined ? null : orgFromCourseKey(fallback.courseKey)) ?? fallback.defaultOrganization;
  if (org === null) throw new Invalid({ non_field_errors: ['no organization: the data names none and DEFAULT_ORGANIZATION is not set'] });
  return org;
}
