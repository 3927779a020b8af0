/** One group: rename, describe, delete; its members, its courses and the rules that fill it. */
import * as api from './api.js';
import { ApiError } from './api.js';
import { h, replace } from './dom.js';
import { deleteGroup } from './page-groups.js';
import type { Course, Group, Membership, Page, Rule, User } from './types.js';
import {
  actionForm,
  busy,
  button,
  confirmDialog,
  field,
  fieldError,
  flash,
  heading,
  intOrRaw,
  listView,
  reportFailure,
  submit,
  table,
  text,
  textArea,
} from './ui.js';

export function groupPage(id: number): HTMLElement {
  const root = h('div', null, heading('Group'), h('p', { class: 'list-status', role: 'status' }, 'Loading the group…'));
  void (async () => {
    try {
      const group = await api.get<Group>(`course-access-groups/${id}/`);
      // The heading that had the focus is replaced: its successor takes it.
      const hadFocus = root.contains(document.activeElement) || document.activeElement === document.body;
      replace(root, ...render(group));
      if (hadFocus) root.querySelector<HTMLElement>('h1')?.focus();
      document.title = `${group.name} · Course Access Groups console`;
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) {
        replace(
          root,
          heading('Group not found'),
          h('p', null, 'No such group in this organization; it may have been deleted. ', h('a', { href: '#/groups' }, 'Back to the groups')),
        );
      } else {
        reportFailure(err);
        replace(root, heading('Group'), h('p', { class: 'list-status list-error', role: 'status' }, 'Could not load the group.'));
      }
    }
  })();
  return root;
}

function render(group: Group): Node[] {
  const title = h('h1', { tabindex: '-1' }, group.name);

  const edit = actionForm(
    { label: 'Edit the group', class: 'stack form-row' },
    [
      field({ name: 'name', label: 'Name', value: group.name, maxlength: 32, help: '1 to 32 characters.' }),
      textArea({ name: 'description', label: 'Description', value: group.description, maxlength: 255, rows: 2 }),
      h('div', { class: 'actions' }, submit('Save changes')),
    ],
    async (data) => {
      const saved = await api.patch<Group>(`course-access-groups/${group.id}/`, { name: text(data, 'name'), description: text(data, 'description') });
      Object.assign(group, saved);
      replace(title, saved.name);
      flash('Group saved.');
    },
  );
  const remove = button(
    'Delete group…',
    () =>
      void busy(remove, async () => {
        if (await deleteGroup(group)) location.hash = '#/groups';
      }),
    { kind: 'danger', ariaLabel: `Delete group ${group.name}…` },
  );

  // Members: memberships/?group= (site administrators who are members included).
  const members = listView<Membership>({
    noun: ['member', 'members'],
    label: 'Members',
    empty: 'No members yet.',
    fetchPage: (limit, offset) => api.get<Page<Membership>>('memberships/', { group: group.id, limit, offset }),
    render: (items) =>
      table(
        `Members of ${group.name}`,
        ['User', 'Email', 'Actions'],
        items.map((m) => {
          const who = m.user.username || `user ${m.user.id}`;
          const out = button(
            'Remove…',
            () =>
              void busy(out, async () => {
                const ok = await confirmDialog({
                  title: `Remove ${who} from “${group.name}”?`,
                  body: [h('p', null, 'They lose access to the courses linked only to this group. A membership rule does not add them back by itself.')],
                  confirm: 'Remove',
                  danger: true,
                });
                if (!ok) return;
                await api.del(`memberships/${m.id}/`);
                flash(`${who} removed from “${group.name}”.`);
                await members.load();
              }),
            { kind: 'danger', ariaLabel: `Remove ${who} from the group…` },
          );
          return [h('span', null, who, h('span', { class: 'muted' }, ` #${m.user.id}`)), m.user.email, out];
        }),
      ),
  });
  const addMember = actionForm(
    { label: 'Add a member', class: 'inline-form' },
    [
      field({ name: 'user', label: 'User id or email', help: 'An email is looked up exactly (any case).' }),
      h('div', { class: 'actions' }, submit('Add member')),
    ],
    async (data, form) => {
      const raw = text(data, 'user').trim();
      let user: number | string = intOrRaw(raw);
      if (raw.includes('@')) {
        const found = await api.get<Page<User>>('users/', { email_exact: raw, limit: 1 });
        const match = found.results[0];
        if (!match) return fieldError(form, 'user', 'No user of this organization has this email.');
        user = match.id;
      }
      const m = await api.post<Membership>('memberships/', { user, group: group.id });
      form.reset();
      flash(`${m.user.username || `User ${m.user.id}`} added to “${group.name}”.`);
      await members.load();
    },
  );

  // Courses: courses/?group= and the link ids in each course's group_links.
  const courses = listView<Course>({
    noun: ['course', 'courses'],
    label: 'Linked courses',
    empty: 'No course is linked to this group yet.',
    fetchPage: (limit, offset) => api.get<Page<Course>>('courses/', { group: group.id, limit, offset }),
    render: (items) =>
      table(
        `Courses linked to ${group.name}`,
        ['Course', 'Id', 'Public', 'Actions'],
        items.map((c) => {
          const link = c.group_links.find((l) => l.group.id === group.id);
          const unlink = button(
            'Unlink',
            () =>
              void busy(unlink, async () => {
                if (!link) return;
                await api.del(`group-courses/${link.id}/`);
                flash(`${c.name} unlinked from “${group.name}”.`);
                await courses.load();
              }),
            { ariaLabel: `Unlink ${c.name} from the group` },
          );
          return [c.name, h('code', null, c.id), c.public_status.is_public ? 'yes' : 'no', unlink];
        }),
      ),
  });
  const linkCourse = actionForm(
    { label: 'Link a course', class: 'inline-form' },
    [field({ name: 'course', label: 'Course id', placeholder: 'course-v1:ORG+NUM+RUN' }), h('div', { class: 'actions' }, submit('Link course'))],
    async (data, form) => {
      await api.post('group-courses/', { course: text(data, 'course').trim(), group: group.id });
      form.reset();
      flash(`Course linked to “${group.name}”.`);
      await courses.load();
    },
  );

  const rules = listView<Rule>({
    noun: ['rule', 'rules'],
    label: 'Membership rules of this group',
    empty: 'No membership rule adds learners to this group.',
    fetchPage: (limit, offset) => api.get<Page<Rule>>('membership-rules/', { group: group.id, limit, offset }),
    render: (items) =>
      table(
        `Membership rules of ${group.name}`,
        ['Rule', 'Domain'],
        items.map((r) => [r.name, `@${r.domain}`]),
      ),
  });

  void members.load(0);
  void courses.load(0);
  void rules.load(0);
  return [
    h('p', { class: 'crumbs' }, h('a', { href: '#/groups' }, '← Groups')),
    h('div', { class: 'page-head' }, title, h('p', { class: 'lead' }, `Group #${group.id}`)),
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'edit-group' },
      h('h2', { id: 'edit-group' }, 'Name and description'),
      edit,
      h('div', { class: 'actions end' }, remove),
    ),
    h('section', { class: 'card', 'aria-labelledby': 'members' }, h('h2', { id: 'members' }, 'Members'), addMember, members.el),
    h('section', { class: 'card', 'aria-labelledby': 'linked-courses' }, h('h2', { id: 'linked-courses' }, 'Courses'), linkCourse, courses.el),
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'group-rules' },
      h('h2', { id: 'group-rules' }, 'Membership rules'),
      rules.el,
      h('p', null, h('a', { href: '#/rules' }, 'Manage the rules')),
    ),
  ];
}
