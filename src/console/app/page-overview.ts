/** Overview: the site flag (with a confirmation that says what it does to learners) and the counts. */
import * as api from './api.js';
import { h, replace } from './dom.js';
import { plural } from './query.js';
import * as session from './session.js';
import type { SiteConfiguration } from './types.js';
import { busy, button, confirmDialog, flash, heading } from './ui.js';

const FLAG = 'ENABLE_COURSE_ACCESS_GROUPS';

export function overviewPage(): HTMLElement {
  const org = session.organization() ?? '';
  const flagState = h('p', { class: 'flag-state', role: 'status' }, 'Loading the setting…');
  const flagActions = h('div', { class: 'actions' });
  const stats = h('div', { class: 'stats-wrap', 'aria-busy': 'true' }, h('p', { class: 'list-status', role: 'status' }, 'Loading the counts…'));

  async function loadFlag(): Promise<void> {
    try {
      const config = await api.get<SiteConfiguration>('site-configuration/');
      const on = config[FLAG];
      flagState.className = `flag-state ${on ? 'flag-on' : 'flag-off'}`;
      replace(
        flagState,
        h('strong', null, on ? 'On. ' : 'Off. '),
        on
          ? 'Learners see and may enroll in public courses and in the courses linked to their group; other courses are hidden from them.'
          : 'Every learner sees and may enroll in every course; groups, links and rules take effect when this is on.',
      );
      const toggle = button(on ? 'Turn off…' : 'Turn on…', () => void busy(toggle, () => confirmAndSet(!on)), {
        kind: on ? 'danger' : 'primary',
        ariaLabel: on ? 'Turn off course access groups…' : 'Turn on course access groups…',
      });
      replace(flagActions, toggle);
    } catch (err) {
      flagState.className = 'flag-state list-error';
      replace(flagState, `Could not load the setting. ${err instanceof Error ? err.message : ''}`);
    }
  }

  async function confirmAndSet(on: boolean): Promise<void> {
    let body: (string | HTMLElement)[];
    if (on) {
      const [hidden, ungrouped] = await Promise.all([api.count('courses/', { is_public: false, no_group: true }), api.count('users/', { no_group: true })]);
      body = [
        h('p', null, `Learners of ${org} will see and enroll only in public courses and in the courses linked to their group.`),
        h(
          'p',
          null,
          `${plural(hidden, 'course')} neither public nor linked to a group will be hidden from every learner; ${plural(ungrouped, 'learner')} in no group will see public courses only.`,
        ),
        h('p', null, 'Site administrators and platform staff keep access to every course.'),
      ];
    } else {
      body = [
        h('p', null, `Every learner of ${org} will see and may enroll in every course.`),
        h('p', null, 'Groups, links and rules are kept, and apply again when you turn this back on.'),
      ];
    }
    const ok = await confirmDialog({
      title: on ? 'Turn on course access groups?' : 'Turn off course access groups?',
      body,
      confirm: on ? 'Turn on' : 'Turn off',
      danger: !on,
    });
    if (!ok) return;
    await api.patch<SiteConfiguration>('site-configuration/', { [FLAG]: on });
    flash(on ? 'Course access groups are on.' : 'Course access groups are off.');
    await Promise.all([loadFlag(), loadStats()]);
  }

  async function loadStats(): Promise<void> {
    stats.setAttribute('aria-busy', 'true');
    try {
      const [groups, courses, publicCourses, linked, unlinked, users, members, loners, rules] = await Promise.all([
        api.count('course-access-groups/'),
        api.count('courses/'),
        api.count('courses/', { is_public: true }),
        api.count('courses/', { no_group: false }),
        api.count('courses/', { no_group: true }),
        api.count('users/'),
        api.count('users/', { no_group: false }),
        api.count('users/', { no_group: true }),
        api.count('membership-rules/'),
      ]);
      const stat = (label: string, value: number, href: string, parts: [string, number][] = []) =>
        h(
          'div',
          { class: 'stat' },
          h('dt', null, h('a', { href }, label)),
          h('dd', { class: 'stat-value' }, String(value)),
          parts.map(([name, n]) => h('dd', { class: 'stat-part' }, `${name}: ${n}`)),
        );
      replace(
        stats,
        h(
          'dl',
          { class: 'stats' },
          stat('Groups', groups, '#/groups'),
          stat('Courses', courses, '#/courses', [
            ['public', publicCourses],
            ['linked to a group', linked],
            ['in no group', unlinked],
          ]),
          stat('Users', users, '#/users', [
            ['in a group', members],
            ['in no group', loners],
          ]),
          stat('Membership rules', rules, '#/rules'),
        ),
      );
    } catch (err) {
      replace(stats, h('p', { class: 'list-status list-error', role: 'status' }, `Could not load the counts. ${err instanceof Error ? err.message : ''}`));
    } finally {
      stats.removeAttribute('aria-busy');
    }
  }

  void loadFlag();
  void loadStats();
  return h(
    'div',
    null,
    heading('Overview', h('p', { class: 'lead' }, `Organization ${org}`)),
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'flag-heading' },
      h('h2', { id: 'flag-heading' }, 'Course access groups (', h('code', null, FLAG), ')'),
      flagState,
      flagActions,
    ),
    h('section', { class: 'card', 'aria-labelledby': 'counts-heading' }, h('h2', { id: 'counts-heading' }, 'In numbers'), stats),
  );
}
