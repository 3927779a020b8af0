/** Users: search, exact email, group filters; add to a group, move, remove. */
import * as api from './api.js';
import { h, uid } from './dom.js';
import type { GroupRef, Membership, Page, User } from './types.js';
import { busy, button, confirmDialog, field, filteredListPage, flash, groupChoices, listView, table } from './ui.js';

export function usersPage(): HTMLElement {
  // Kept in memory only: the console's own URL never carries a search or an email.
  const filters = { search: '', email_exact: '', group: '', no_group: '' };
  let groups: GroupRef[] = [];

  const list = listView<User>({
    noun: ['user', 'users'],
    label: 'Users',
    empty: 'No user matches.',
    fetchPage: (limit, offset) => api.get<Page<User>>('users/', { ...filters, limit, offset }),
    render: (users) =>
      table(
        'Users',
        ['User', 'Email', 'Group', 'Membership'],
        users.map((u) => [
          h('span', { class: 'user' }, h('span', null, u.name || u.username), h('span', { class: 'muted' }, `${u.username} · #${u.id}`)),
          u.email,
          u.membership ? h('a', { href: `#/groups/${u.membership.group.id}` }, u.membership.group.name) : h('span', { class: 'muted' }, 'no group'),
          membershipCell(u),
        ]),
      ),
  });

  function membershipCell(u: User): HTMLElement {
    const who = u.username || `user ${u.id}`;
    const m = u.membership;
    const choices = groups.filter((g) => g.id !== m?.group.id);
    const select = h(
      'select',
      { id: uid('user-group'), 'aria-label': m ? `Group to move ${who} to` : `Group to add ${who} to` },
      groupChoices(choices, 'Choose a group').map(([value, label]) => h('option', { value }, label)),
    );
    const go = button(
      m ? 'Move' : 'Add',
      () =>
        void busy(go, async () => {
          if (!select.value) {
            select.focus();
            flash('Choose a group first.', 'error');
            return;
          }
          const group = Number(select.value);
          const saved = m ? await api.patch<Membership>(`memberships/${m.id}/`, { group }) : await api.post<Membership>('memberships/', { user: u.id, group });
          flash(m ? `${who} moved to “${saved.group.name}”.` : `${who} added to “${saved.group.name}”.`);
          await list.load();
        }),
      { kind: 'primary', ariaLabel: m ? `Move ${who} to the chosen group` : `Add ${who} to the chosen group` },
    );
    const parts: Node[] = [select, go];
    if (m) {
      const out = button(
        'Remove…',
        () =>
          void busy(out, async () => {
            const ok = await confirmDialog({
              title: `Remove ${who} from “${m.group.name}”?`,
              body: [h('p', null, 'They lose access to the courses linked only to that group.')],
              confirm: 'Remove',
              danger: true,
            });
            if (!ok) return;
            await api.del(`memberships/${m.id}/`);
            flash(`${who} removed from “${m.group.name}”.`);
            await list.load();
          }),
        { kind: 'danger', ariaLabel: `Remove ${who} from ${m.group.name}…` },
      );
      parts.push(out);
    }
    return h('span', { class: 'cell-actions' }, parts);
  }

  return filteredListPage({
    title: 'Users',
    lead: 'Learners of the organization (site administrators are not listed). A learner belongs to at most one group.',
    filterLabel: 'Filter users',
    listLabel: 'User list',
    filters,
    list,
    trim: true,
    fields: () => [
      field({ name: 'search', label: 'Search', type: 'search', help: 'Username, name or email; every word must match.' }),
      field({ name: 'email_exact', label: 'Exact email', type: 'email', help: 'The whole address, any case.' }),
    ],
    noGroup: { label: 'Membership', inAGroup: 'In a group' },
    groupsLoaded: (loaded) => {
      groups = loaded;
    },
  });
}
