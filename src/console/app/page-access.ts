/** Access check: "may learner X do A on course C?", the decision and its reason (docs/api.md). */
import * as api from './api.js';
import { ApiError } from './api.js';
import { h, replace } from './dom.js';
import { REASONS } from './query.js';
import type { Decision } from './types.js';
import { actionForm, field, fieldError, heading, intOrRaw, selectField, submit, text } from './ui.js';

const ACTIONS: [string, string][] = [
  ['course.enroll', 'Enroll (course.enroll)'],
  ['course.see_in_catalog', 'See in the catalog (course.see_in_catalog)'],
  ['course.see_about_page', 'See the about page (course.see_about_page)'],
  ['course.see_exists', 'Know it exists (course.see_exists)'],
];

export function accessPage(): HTMLElement {
  const result = h('section', { class: 'card decision', 'aria-live': 'polite', 'aria-label': 'Decision' });
  result.hidden = true;
  const form = actionForm(
    { label: 'Access check', class: 'stack form-row' },
    [
      field({ name: 'user_id', label: "Learner's user id", inputmode: 'numeric', help: 'Leave empty for an anonymous visitor.' }),
      field({ name: 'course_id', label: 'Course id', placeholder: 'course-v1:ORG+NUM+RUN' }),
      selectField({ name: 'action', label: 'Action', options: ACTIONS }),
      h('div', { class: 'actions' }, submit('Check access')),
    ],
    async (data, f) => {
      result.hidden = true;
      const userId = text(data, 'user_id').trim();
      const courseId = text(data, 'course_id').trim();
      const action = text(data, 'action');
      try {
        // The organization is the course's, so no organization_uuid here.
        const decision = await api.call<Decision>('GET', 'access/', {
          query: { course_id: courseId, action, user_id: userId === '' ? undefined : intOrRaw(userId) },
          scoped: false,
        });
        const who = userId === '' ? 'An anonymous visitor' : `Learner #${userId}`;
        const what = ACTIONS.find(([a]) => a === action)?.[1] ?? action;
        replace(
          result,
          h('h2', null, 'Decision'),
          h('p', { class: decision.allowed ? 'verdict verdict-yes' : 'verdict verdict-no' }, decision.allowed ? 'Allowed' : 'Denied'),
          h('p', null, `${who} — ${what} — `, h('code', null, courseId)),
          h('p', null, 'Reason: ', h('code', { class: 'reason' }, decision.reason), ' — ', REASONS[decision.reason] ?? ''),
        );
        result.hidden = false;
      } catch (err) {
        if (err instanceof ApiError && err.status === 404) return fieldError(f, 'course_id', 'No course with this id in your organization.');
        throw err;
      }
    },
  );
  return h(
    'div',
    null,
    heading('Access check', h('p', { class: 'lead' }, 'The decision the LMS gets when this learner asks for this course.')),
    h('section', { class: 'card', 'aria-label': 'Question' }, form),
    result,
  );
}
