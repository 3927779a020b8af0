/** Membership rules: learners whose email has a domain join a group; apply one to existing learners. */
import * as api from './api.js';
import { h, replace } from './dom.js';
import { plural } from './query.js';
import type { GroupRef, Page, Rule } from './types.js';
import {
  actionForm,
  busy,
  button,
  confirmDialog,
  field,
  flash,
  groupChoices,
  groupOptions,
  heading,
  intOrRaw,
  listView,
  reportFailure,
  selectField,
  submit,
  table,
  text,
} from './ui.js';

const DOMAIN_HELP = 'Learners whose email ends in @ this domain join the group when they activate their account; for example example.com.';

export function rulesPage(): HTMLElement {
  let groups: GroupRef[] = [];

  // No group chosen: left out, so the API says the field is required (a PATCH keeps the group).
  const ruleBody = (data: FormData) => ({
    name: text(data, 'name'),
    domain: text(data, 'domain'),
    group: text(data, 'group') === '' ? undefined : intOrRaw(text(data, 'group')),
  });

  const list = listView<Rule>({
    noun: ['rule', 'rules'],
    label: 'Membership rules',
    empty: 'No membership rules yet.',
    fetchPage: (limit, offset) => api.get<Page<Rule>>('membership-rules/', { limit, offset }),
    render: (rules) => {
      const t = table(
        'Membership rules',
        ['Name', 'Domain', 'Group', 'Actions'],
        rules.map((r) => [r.name, `@${r.domain}`, h('a', { href: `#/groups/${r.group.id}` }, r.group.name), actions(r)]),
      );
      return t;
    },
  });

  function actions(r: Rule): HTMLElement {
    const edit = button('Edit', () => startEdit(r, edit), { ariaLabel: `Edit rule ${r.name}` });
    const apply = button(
      'Apply to existing learners…',
      () =>
        void busy(apply, async () => {
          const ok = await confirmDialog({
            title: `Apply “${r.name}” to existing learners?`,
            body: [
              h('p', null, `Every active learner whose email ends in @${r.domain} and who is in no group joins “${r.group.name}”.`),
              h('p', null, 'Learners already in a group stay where they are.'),
            ],
            confirm: 'Apply rule',
          });
          if (!ok) return;
          const { created } = await api.post<{ created: number }>(`membership-rules/${r.id}/apply/`);
          flash(`${plural(created, 'learner')} joined “${r.group.name}”.`);
        }),
      { ariaLabel: `Apply rule ${r.name} to existing learners…` },
    );
    const remove = button(
      'Delete…',
      () =>
        void busy(remove, async () => {
          const ok = await confirmDialog({
            title: `Delete the rule “${r.name}”?`,
            body: [h('p', null, `Learners it already added stay in “${r.group.name}”; new learners with @${r.domain} will no longer join it.`)],
            confirm: 'Delete rule',
            danger: true,
          });
          if (!ok) return;
          await api.del(`membership-rules/${r.id}/`);
          flash(`Rule “${r.name}” deleted.`);
          await list.load();
        }),
      { kind: 'danger', ariaLabel: `Delete rule ${r.name}…` },
    );
    return h('span', { class: 'cell-actions' }, edit, apply, remove);
  }

  /** Replaces the rule's row with its edit form; Cancel or a save puts the list back. */
  function startEdit(r: Rule, from: HTMLElement): void {
    const row = from.closest('tr');
    if (!row) return;
    const form = actionForm(
      { label: `Edit rule ${r.name}`, class: 'stack form-row' },
      [
        field({ name: 'name', label: 'Name', value: r.name, maxlength: 255 }),
        field({ name: 'domain', label: 'Domain', value: r.domain, help: DOMAIN_HELP }),
        selectField({ name: 'group', label: 'Group', options: groupChoices(groups, 'Choose a group'), value: String(r.group.id) }),
        h(
          'div',
          { class: 'actions' },
          submit('Save rule'),
          button('Cancel', () => void list.load()),
        ),
      ],
      async (data) => {
        const saved = await api.patch<Rule>(`membership-rules/${r.id}/`, ruleBody(data));
        flash(`Rule “${saved.name}” saved.`);
        await list.load();
      },
    );
    const cell = h('td', { colspan: 4, class: 'edit-cell' }, form);
    replace(row, cell);
    row.classList.add('editing');
    form.querySelector<HTMLInputElement>('input')?.focus();
  }

  const groupSlot = h('div', { class: 'field-slot' });
  const create = actionForm(
    { label: 'New membership rule', class: 'stack form-row' },
    [
      field({ name: 'name', label: 'Name', maxlength: 255 }),
      field({ name: 'domain', label: 'Domain', help: DOMAIN_HELP }),
      groupSlot,
      h('div', { class: 'actions' }, submit('Create rule')),
    ],
    async (data, form) => {
      const rule = await api.post<Rule>('membership-rules/', ruleBody(data));
      form.reset();
      flash(`Rule “${rule.name}” created: @${rule.domain} → “${rule.group.name}”.`);
      await list.load(0);
    },
  );

  void (async () => {
    try {
      groups = (await groupOptions()).groups;
    } catch (err) {
      reportFailure(err);
    }
    groupSlot.replaceWith(selectField({ name: 'group', label: 'Group', options: groupChoices(groups, 'Choose a group') }));
    await list.load(0);
  })();

  return h(
    'div',
    null,
    heading(
      'Membership rules',
      h('p', { class: 'lead' }, 'A rule puts learners into a group by the domain of their email, once they have activated their account.'),
    ),
    h('section', { class: 'card', 'aria-labelledby': 'new-rule' }, h('h2', { id: 'new-rule' }, 'New rule'), create),
    h('section', { class: 'card', 'aria-labelledby': 'all-rules' }, h('h2', { id: 'all-rules' }, 'All rules'), list.el),
  );
}
