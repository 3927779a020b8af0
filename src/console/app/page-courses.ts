/** Courses: search and filters, public or private, links to groups. */
import * as api from './api.js';
import { h, uid } from './dom.js';
import type { Course, GroupRef, Page, PublicRecord } from './types.js';
import { busy, button, field, filteredListPage, flash, groupChoices, listView, selectField, table } from './ui.js';

export function coursesPage(): HTMLElement {
  const filters = { search: '', is_public: '', group: '', no_group: '' };
  let groups: GroupRef[] = [];

  const list = listView<Course>({
    noun: ['course', 'courses'],
    label: 'Courses',
    empty: 'No course matches.',
    fetchPage: (limit, offset) => api.get<Page<Course>>('courses/', { ...filters, limit, offset }),
    render: (courses) =>
      table(
        'Courses',
        ['Course', 'Public', 'Groups', 'Link to a group'],
        courses.map((c) => [
          h('span', { class: 'course' }, h('span', null, c.name), h('code', null, c.id)),
          publicCell(c),
          c.group_links.length === 0
            ? h('span', { class: 'muted' }, 'none')
            : h(
                'ul',
                { class: 'chips' },
                c.group_links.map((l) => {
                  const unlink = button(
                    'Unlink',
                    () =>
                      void busy(unlink, async () => {
                        await api.del(`group-courses/${l.id}/`);
                        flash(`${c.name} unlinked from “${l.group.name}”.`);
                        await list.load();
                      }),
                    { ariaLabel: `Unlink ${c.name} from ${l.group.name}` },
                  );
                  return h('li', null, h('a', { href: `#/groups/${l.group.id}` }, l.group.name), ' ', unlink);
                }),
              ),
          linkCell(c),
        ]),
      ),
  });

  function publicCell(c: Course): HTMLElement {
    const isPublic = c.public_status.is_public;
    const toggle = button(
      isPublic ? 'Make private' : 'Make public',
      () =>
        void busy(toggle, async () => {
          if (isPublic) await api.del(`public-courses/${c.public_status.id}/`);
          else await api.post<PublicRecord>('public-courses/', { course: c.id });
          flash(isPublic ? `${c.name} is private.` : `${c.name} is public.`);
          await list.load();
        }),
      { ariaLabel: `${isPublic ? 'Make private' : 'Make public'}: ${c.name}` },
    );
    return h('span', { class: 'cell-actions' }, h('span', { class: isPublic ? 'badge badge-on' : 'badge' }, isPublic ? 'public' : 'private'), toggle);
  }

  function linkCell(c: Course): HTMLElement {
    const id = uid('link');
    const choices = groups.filter((g) => !c.group_links.some((l) => l.group.id === g.id));
    const select = h(
      'select',
      { id, 'aria-label': `Group to link ${c.name} to` },
      groupChoices(choices, 'Choose a group').map(([value, label]) => h('option', { value }, label)),
    );
    const go = button(
      'Link',
      () =>
        void busy(go, async () => {
          if (!select.value) {
            select.focus();
            flash('Choose a group to link the course to.', 'error');
            return;
          }
          const group = groups.find((g) => String(g.id) === select.value);
          await api.post('group-courses/', { course: c.id, group: Number(select.value) });
          flash(`${c.name} linked to “${group?.name ?? select.value}”.`);
          await list.load();
        }),
      { ariaLabel: `Link ${c.name} to the chosen group` },
    );
    return h('span', { class: 'cell-actions' }, select, go);
  }

  return filteredListPage({
    title: 'Courses',
    lead: 'With the setting on, a learner sees a course when it is public or linked to their group.',
    filterLabel: 'Filter courses',
    listLabel: 'Course list',
    filters,
    list,
    trim: false,
    fields: (apply) => [
      field({ name: 'search', label: 'Search', type: 'search', help: 'Course id or name; every word must match.' }),
      selectField({
        name: 'is_public',
        label: 'Public',
        options: [
          ['', 'Any'],
          ['true', 'Public'],
          ['false', 'Private'],
        ],
        onchange: () => apply(),
      }),
    ],
    noGroup: { label: 'Links', inAGroup: 'Linked to a group' },
    groupsLoaded: (loaded) => {
      groups = loaded;
    },
  });
}
