import { type EntryBase, type Fold, foldHistory, type History, type Place } from './record-history';

/**
 * A course's state as one pure function of its history (docs/event-core.md "The fold"): its
 * catalog fields and organization from the newest catalog event, or deleted.
 */

export type CourseEntry = EntryBase & ({ kind: 'catalog'; org: string; name: string } | { kind: 'deleted' });

export interface CourseRecord {
  org: string;
  name: string;
}

export interface CourseState {
  /** null: never seen, or deleted. */
  record: CourseRecord | null;
  /** Where the current incarnation (in the current organization) began: a link or public record made before it is gone. */
  since: Place | null;
}

export const NO_COURSE: CourseState = { record: null, since: null };

export const courseFold: Fold<CourseEntry, CourseState> = {
  initial: NO_COURSE,
  resets: (e) => e.kind === 'deleted',
  step(s, e) {
    if (e.kind === 'deleted') return NO_COURSE;
    const fresh = s.record === null || s.record.org !== e.org;
    return { record: { org: e.org, name: e.name }, since: fresh ? { at: e.at, seq: e.seq } : s.since };
  },
};

export const foldCourse = (h: History<CourseEntry, CourseState>): CourseState => foldHistory(h, courseFold);
