/** Groups: create, list, delete; each group's page (page-group.ts) edits it and its members and courses. */
import * as api from './api.js';
import { h } from './dom.js';
import type { Group, Page } from './types.js';
import { actionForm, busy, button, confirmDialog, field, flash, groupDeletionSummary, heading, listView, submit, table, text, textArea } from './ui.js';

/** Confirms, then deletes a group; true when it was deleted. */
export async function deleteGroup(group: { id: number; name: string }): Promise<boolean> {
  const summary = await groupDeletionSummary(group.id);
  const ok = await confirmDialog({ title: `Delete the group “${group.name}”?`, body: [h('p', null, summary)], confirm: 'Delete group', danger: true });
  if (!ok) return false;
  await api.del(`course-access-groups/${group.id}/`);
  flash(`Group “${group.name}” deleted.`);
  return true;
}

export function groupsPage(): HTMLElement {
  const list = listView<Group>({
    noun: ['group', 'groups'],
    label: 'Groups',
    empty: 'No groups yet. Create the first one above.',
    fetchPage: (limit, offset) => api.get<Page<Group>>('course-access-groups/', { limit, offset }),
    render: (groups) =>
      table(
        'Groups',
        ['Name', 'Description', 'Actions'],
        groups.map((g) => {
          const remove = button(
            'Delete…',
            () =>
              void busy(remove, async () => {
                if (await deleteGroup(g)) await list.load();
              }),
            { kind: 'danger', ariaLabel: `Delete group ${g.name}…` },
          );
          return [h('a', { href: `#/groups/${g.id}` }, g.name), g.description || h('span', { class: 'muted' }, '—'), remove];
        }),
      ),
  });

  const create = actionForm(
    { label: 'New group', class: 'stack form-row' },
    [
      field({ name: 'name', label: 'Name', maxlength: 32, help: '1 to 32 characters.' }),
      textArea({ name: 'description', label: 'Description', maxlength: 255, rows: 2, help: 'Optional, up to 255 characters.' }),
      h('div', { class: 'actions' }, submit('Create group')),
    ],
    async (data, form) => {
      const group = await api.post<Group>('course-access-groups/', { name: text(data, 'name'), description: text(data, 'description') });
      form.reset();
      flash(`Group “${group.name}” created.`);
      await list.load(0);
      form.querySelector<HTMLInputElement>('input[name="name"]')?.focus();
    },
  );

  void list.load(0);
  return h(
    'div',
    null,
    heading('Groups', h('p', { class: 'lead' }, 'Learners of a group see the courses linked to it.')),
    h('section', { class: 'card', 'aria-labelledby': 'new-group' }, h('h2', { id: 'new-group' }, 'New group'), create),
    h('section', { class: 'card', 'aria-labelledby': 'all-groups' }, h('h2', { id: 'all-groups' }, 'All groups'), list.el),
  );
}
