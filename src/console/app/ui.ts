/** Shared pieces of every page: fields with their errors, lists with pages, dialogs, notices. */

import * as api from './api.js';
import { ApiError, SignedOut } from './api.js';
import { type Child, h, replace, uid } from './dom.js';
import { pageSummary, plural } from './query.js';
import type { GroupRef, Page } from './types.js';

// --- announcements ---------------------------------------------------------------------------

/** The page's notice line (visible, and read out by screen readers: it is a live region). */
export function flash(message: string, kind: 'ok' | 'error' = 'ok'): void {
  const el = document.getElementById('flash');
  if (!el) return;
  el.className = `flash flash-${kind}`;
  // A fresh text node each time, so the same message twice is announced twice.
  replace(el, message);
}

export function clearFlash(): void {
  const el = document.getElementById('flash');
  if (el) {
    el.className = 'flash';
    replace(el);
  }
}

/** What a failed action says (a 401 has already gone to sign-in: nothing to say). */
export function reportFailure(err: unknown): void {
  if (err instanceof SignedOut) return;
  flash(err instanceof ApiError ? err.message : `Something went wrong: ${String(err)}`, 'error');
}

// --- form fields ---------------------------------------------------------------------------

export interface FieldOptions {
  name: string;
  label: string;
  type?: string;
  value?: string;
  required?: boolean;
  maxlength?: number;
  help?: string;
  placeholder?: string;
  autocomplete?: string;
  inputmode?: string;
}

/** A labelled input with its help and its error line (filled from the API's `{"<name>": [...]}`). */
export function field(o: FieldOptions): HTMLElement {
  const id = uid(o.name);
  const input = h('input', {
    id,
    name: o.name,
    type: o.type ?? 'text',
    value: o.value,
    required: o.required,
    maxlength: o.maxlength,
    placeholder: o.placeholder,
    autocomplete: o.autocomplete ?? 'off',
    inputmode: o.inputmode,
    spellcheck: 'false',
  });
  return wrapField(o.name, id, o.label, input, o.help);
}

export function textArea(o: FieldOptions & { rows?: number }): HTMLElement {
  const id = uid(o.name);
  const input = h('textarea', { id, name: o.name, rows: o.rows ?? 3, required: o.required, maxlength: o.maxlength, spellcheck: 'false', autocomplete: 'off' });
  input.value = o.value ?? '';
  return wrapField(o.name, id, o.label, input, o.help);
}

export function selectField(o: {
  name: string;
  label: string;
  options: [string, string][];
  value?: string;
  help?: string;
  onchange?: (e: Event) => void;
}): HTMLElement {
  const id = uid(o.name);
  const select = h(
    'select',
    { id, name: o.name, onchange: o.onchange },
    o.options.map(([value, text]) => h('option', { value, selected: value === (o.value ?? '') }, text)),
  );
  return wrapField(o.name, id, o.label, select, o.help);
}

function wrapField(name: string, id: string, label: string, control: HTMLElement, help?: string): HTMLElement {
  const helpId = help ? `${id}-help` : null;
  const errorId = `${id}-error`;
  control.setAttribute('aria-describedby', [helpId, errorId].filter(Boolean).join(' '));
  return h(
    'div',
    { class: 'field', 'data-field': name },
    h('label', { for: id }, label),
    control,
    help ? h('p', { class: 'help', id: helpId }, help) : null,
    h('p', { class: 'field-error', id: errorId }),
  );
}

/** The form's own error area (non_field_errors, and anything that is not one of its fields). */
export function formErrors(): HTMLElement {
  return h('div', { class: 'form-errors', role: 'alert' });
}

export function clearErrors(form: HTMLElement): void {
  for (const el of form.querySelectorAll('.field-error, .form-errors')) replace(el);
  for (const el of form.querySelectorAll('[aria-invalid]')) el.removeAttribute('aria-invalid');
}

/** Puts each field's messages next to it, the rest in the form's error area; focuses the first bad field. */
export function showErrors(form: HTMLElement, err: unknown, aliases: Record<string, string> = {}): void {
  if (err instanceof SignedOut) return;
  const general: string[] = [];
  let first: HTMLElement | null = null;
  if (err instanceof ApiError) {
    for (const [name, messages] of Object.entries(err.report.fields)) {
      const fieldName = aliases[name] ?? name;
      const wrapper = form.querySelector<HTMLElement>(`.field[data-field="${CSS.escape(fieldName)}"]`);
      const control = wrapper?.querySelector<HTMLElement>('input, select, textarea');
      const line = wrapper?.querySelector('.field-error');
      if (wrapper && control && line) {
        replace(line, messages.join(' '));
        control.setAttribute('aria-invalid', 'true');
        first ??= control;
      } else {
        general.push(`${name}: ${messages.join(' ')}`);
      }
    }
    general.push(...err.report.general);
    if (general.length === 0 && Object.keys(err.report.fields).length === 0) general.push(err.message);
  } else {
    general.push(`Something went wrong: ${String(err)}`);
  }
  const area = form.querySelector('.form-errors');
  if (area && general.length > 0) replace(area, general.join(' '));
  first?.focus();
}

/** Sets one field's error from the console itself (e.g. "No user has this email."). */
export function fieldError(form: HTMLElement, name: string, message: string): void {
  const wrapper = form.querySelector<HTMLElement>(`.field[data-field="${CSS.escape(name)}"]`);
  const control = wrapper?.querySelector<HTMLElement>('input, select, textarea');
  const line = wrapper?.querySelector('.field-error');
  if (line) replace(line, message);
  control?.setAttribute('aria-invalid', 'true');
  control?.focus();
}

/**
 * A form whose submission runs `action` (never a navigation): the submit button is disabled
 * meanwhile, errors of the previous try are cleared, a failure is shown next to its fields.
 */
export function actionForm(
  attrs: { label: string; class?: string },
  children: Child[],
  action: (data: FormData, form: HTMLFormElement) => Promise<void>,
  aliases?: Record<string, string>,
): HTMLFormElement {
  const form = h('form', { class: attrs.class ?? 'stack', 'aria-label': attrs.label, novalidate: true }, formErrors(), children);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void (async () => {
      const buttons = [...form.querySelectorAll('button')];
      clearErrors(form);
      for (const b of buttons) b.disabled = true;
      form.setAttribute('aria-busy', 'true');
      try {
        await action(new FormData(form), form);
      } catch (err) {
        showErrors(form, err, aliases);
      } finally {
        for (const b of buttons) b.disabled = false;
        form.removeAttribute('aria-busy');
      }
    })();
  });
  return form;
}

export const text = (data: FormData, name: string) => String(data.get(name) ?? '');

/** A number for the API when `raw` is an integer, else the raw text: the API's own 400 then names the field. */
export const intOrRaw = (raw: string): number | string => (/^\d{1,15}$/.test(raw.trim()) ? Number(raw.trim()) : raw);

export function button(
  label: string,
  onclick: (e: Event) => void,
  o: { kind?: 'primary' | 'danger' | 'plain'; ariaLabel?: string; type?: 'button' | 'submit' } = {},
): HTMLButtonElement {
  return h('button', { type: o.type ?? 'button', class: `btn btn-${o.kind ?? 'plain'}`, 'aria-label': o.ariaLabel, onclick }, label);
}

export const submit = (label: string, kind: 'primary' | 'danger' | 'plain' = 'primary', ariaLabel?: string) =>
  h('button', { type: 'submit', class: `btn btn-${kind}`, 'aria-label': ariaLabel }, label);

/**
 * Runs a row action with its button disabled meanwhile (no double submission); failures go to
 * the notice line. A disabled button loses the focus, so a keyboard user gets it back after, or
 * the page's heading when the row is gone (e.g. deleted).
 */
export async function busy(el: HTMLButtonElement, action: () => Promise<void>): Promise<void> {
  el.disabled = true;
  try {
    await action();
  } catch (err) {
    reportFailure(err);
  } finally {
    el.disabled = false;
    const lost = document.activeElement === null || document.activeElement === document.body;
    if (lost && el.isConnected) el.focus();
    else if (lost) document.querySelector<HTMLElement>('main h1')?.focus();
  }
}

// --- dialogs ---------------------------------------------------------------------------------

/**
 * A modal confirmation (the native <dialog>: focus stays inside, Escape cancels). Cancel has
 * the focus, so Enter alone never deletes.
 */
export function confirmDialog(o: { title: string; body: Child[]; confirm: string; danger?: boolean }): Promise<boolean> {
  const titleId = uid('dialog-title');
  const bodyId = uid('dialog-body');
  const previous = document.activeElement as HTMLElement | null;
  return new Promise((resolve) => {
    const dialog = h('dialog', { class: 'dialog', 'aria-labelledby': titleId, 'aria-describedby': bodyId });
    const cancel = h('button', { type: 'button', class: 'btn btn-plain', onclick: () => dialog.close('cancel') }, 'Cancel');
    const ok = h('button', { type: 'button', class: `btn ${o.danger ? 'btn-danger' : 'btn-primary'}`, onclick: () => dialog.close('confirm') }, o.confirm);
    replace(dialog, h('h2', { id: titleId }, o.title), h('div', { id: bodyId, class: 'dialog-body' }, o.body), h('div', { class: 'actions' }, cancel, ok));
    dialog.addEventListener('close', () => {
      dialog.remove();
      if (previous?.isConnected) previous.focus();
      resolve(dialog.returnValue === 'confirm');
    });
    document.body.append(dialog);
    dialog.showModal();
    cancel.focus();
  });
}

// --- lists -----------------------------------------------------------------------------------

export const PAGE_SIZE = 20;

export interface ListView<T> {
  el: HTMLElement;
  /** Loads the page at `offset` (default: the current one; 0 after a filter changed). */
  load(offset?: number): Promise<void>;
  items(): T[];
}

/**
 * A paginated list with its loading, empty and error states. `fetchPage` calls the API with
 * limit/offset; answers that arrive after a newer request are dropped (fast filter changes).
 */
export function listView<T>(o: {
  noun: [string, string];
  empty: string;
  fetchPage: (limit: number, offset: number) => Promise<Page<T>>;
  render: (items: T[]) => Node;
  label: string;
}): ListView<T> {
  const status = h('p', { class: 'list-status', role: 'status' });
  const body = h('div', { class: 'list-body' });
  const summary = h('span', { class: 'pager-summary' });
  const prev = button('Previous page', () => void view.load(Math.max(offset - PAGE_SIZE, 0)), { ariaLabel: `Previous page of ${o.noun[1]}` });
  const next = button('Next page', () => void view.load(offset + PAGE_SIZE), { ariaLabel: `Next page of ${o.noun[1]}` });
  const pager = h('nav', { class: 'pager', 'aria-label': `Pages of ${o.label}` }, summary, h('span', { class: 'pager-buttons' }, prev, next));
  const el = h('section', { class: 'list', 'aria-label': o.label }, status, body, pager);
  let offset = 0;
  let sequence = 0;
  let current: T[] = [];

  const view: ListView<T> = {
    el,
    items: () => current,
    async load(at = offset) {
      const mine = ++sequence;
      el.setAttribute('aria-busy', 'true');
      status.className = 'list-status';
      replace(status, `Loading ${o.noun[1]}…`);
      try {
        const page = await o.fetchPage(PAGE_SIZE, at);
        if (mine !== sequence) return;
        // A page past the end (its last row was deleted): show the last one there is.
        if (page.results.length === 0 && at > 0 && page.count > 0) {
          await view.load(Math.max(Math.floor((page.count - 1) / PAGE_SIZE) * PAGE_SIZE, 0));
          return;
        }
        offset = at;
        current = page.results;
        replace(status, page.count === 0 ? o.empty : '');
        replace(body, page.count === 0 ? null : o.render(page.results));
        replace(summary, page.count === 0 ? '' : `${pageSummary(page.count, offset, page.results.length)} ${page.count === 1 ? o.noun[0] : o.noun[1]}`);
        prev.disabled = offset === 0;
        next.disabled = page.next === null;
        pager.hidden = page.count <= PAGE_SIZE && offset === 0;
      } catch (err) {
        if (mine !== sequence || err instanceof SignedOut) return;
        status.className = 'list-status list-error';
        replace(status, `Could not load the ${o.noun[1]}. ${err instanceof ApiError ? err.message : String(err)}`);
        replace(body);
        pager.hidden = true;
      } finally {
        if (mine === sequence) el.removeAttribute('aria-busy');
      }
    },
  };
  // Loading from the start: some pages fetch their pickers before the list's first request.
  pager.hidden = true;
  el.setAttribute('aria-busy', 'true');
  replace(status, `Loading ${o.noun[1]}…`);
  return view;
}

/**
 * The page of a list whose records can be in a group (courses, users): its heading, a filter
 * form and the list. The form holds the page's own `fields`, a group picker (once the
 * organization's groups are loaded), the `no_group` picker, Search and Clear. Search, Clear and
 * a picker's change copy the form into `filters` (trimmed when `trim`) and reload the list from
 * its first page. The list's first load waits for the groups (a failure to load them is
 * reported, the list still loads).
 */
export function filteredListPage<F extends Record<string, string>>(o: {
  title: string;
  lead: string;
  filterLabel: string;
  listLabel: string;
  filters: F;
  list: ListView<unknown>;
  trim: boolean;
  fields: (apply: () => void) => Child[];
  /** The `no_group` picker's label and its words for "in a group". */
  noGroup: { label: string; inAGroup: string };
  groupsLoaded: (groups: GroupRef[]) => void;
}): HTMLElement {
  const groupFilter = h('div', { class: 'field-slot' });
  const form = h(
    'form',
    { class: 'filters', role: 'search', 'aria-label': o.filterLabel, novalidate: true },
    o.fields(() => apply()),
    groupFilter,
    selectField({
      name: 'no_group',
      label: o.noGroup.label,
      options: [
        ['', 'Any'],
        ['false', o.noGroup.inAGroup],
        ['true', 'In no group'],
      ],
      onchange: () => apply(),
    }),
    h(
      'div',
      { class: 'actions' },
      submit('Search'),
      button('Clear', () => {
        form.reset();
        apply();
      }),
    ),
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    apply();
  });
  function apply(): void {
    const data = new FormData(form);
    for (const key of Object.keys(o.filters) as (keyof F)[]) {
      const value = String(data.get(key as string) ?? '');
      o.filters[key] = (o.trim ? value.trim() : value) as F[keyof F];
    }
    void o.list.load(0);
  }

  void (async () => {
    try {
      const groups = (await groupOptions()).groups;
      o.groupsLoaded(groups);
      groupFilter.replaceWith(selectField({ name: 'group', label: 'Group', options: groupChoices(groups, 'Any group'), onchange: () => apply() }));
    } catch (err) {
      reportFailure(err);
    }
    await o.list.load(0);
  })();

  return h(
    'div',
    null,
    heading(o.title, h('p', { class: 'lead' }, o.lead)),
    h('section', { class: 'card', 'aria-label': 'Filters' }, form),
    h('section', { class: 'card', 'aria-label': o.listLabel }, o.list.el),
  );
}

/** A table that becomes a list of cards on a narrow screen (each cell labelled by its column). */
export function table(caption: string, head: string[], rows: Child[][], o: { captionHidden?: boolean } = {}): HTMLTableElement {
  return h(
    'table',
    { class: 'data' },
    h('caption', { class: o.captionHidden === false ? null : 'visually-hidden' }, caption),
    h(
      'thead',
      null,
      h(
        'tr',
        null,
        head.map((name) => h('th', { scope: 'col' }, name)),
      ),
    ),
    h(
      'tbody',
      null,
      rows.map((cells) =>
        h(
          'tr',
          null,
          cells.map((cell, i) => h('td', { 'data-label': head[i] ?? '' }, cell)),
        ),
      ),
    ),
  );
}

// --- shared data -----------------------------------------------------------------------------

/** The organization's groups for pickers (the first 1000, the API's largest page). */
export async function groupOptions(): Promise<{ groups: GroupRef[]; more: boolean }> {
  const page = await api.get<Page<GroupRef>>('course-access-groups/', { limit: 1000 });
  return { groups: page.results, more: page.count > page.results.length };
}

export const groupChoices = (groups: GroupRef[], none: string): [string, string][] => [
  ['', none],
  ...groups.map((g): [string, string] => [String(g.id), g.name]),
];

/** What deleting group `id` takes with it, for the confirmation. */
export async function groupDeletionSummary(id: number): Promise<string> {
  const [members, rules, links] = await Promise.all([
    api.count('memberships/', { group: id }),
    api.count('membership-rules/', { group: id }),
    api.count('courses/', { group: id }),
  ]);
  return `This also deletes ${plural(members, 'membership')}, ${plural(rules, 'membership rule')} and ${plural(links, 'course link')}. Its members lose access to the courses linked only to it.`;
}

export function heading(title: string, ...rest: Child[]): HTMLElement {
  return h('div', { class: 'page-head' }, h('h1', { tabindex: '-1' }, title), rest);
}
