/** Query strings, DRF error bodies and wording. Pure (no DOM), so unit tests run it in Node. */

export type QueryValue = string | number | boolean | null | undefined;

/**
 * `?a=1&b=x` from the parameters that have a value: empty strings, null and undefined are left
 * out (an empty filter means "no filter"), booleans are written `true`/`false`.
 */
export function buildQuery(params: Record<string, QueryValue>): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value === undefined || value === null || value === '') continue;
    search.set(name, typeof value === 'string' ? value : String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}

/** "21–40 of 45": the rows a page shows. */
export function pageSummary(count: number, offset: number, shown: number): string {
  if (count === 0 || shown === 0) return `0 of ${count}`;
  return `${offset + 1}–${offset + shown} of ${count}`;
}

export interface ErrorReport {
  /** Messages by field name, as DRF reports them. */
  fields: Record<string, string[]>;
  /** `non_field_errors`, `detail` and anything that is not a field's list. */
  general: string[];
}

/** A DRF error body (`{"field": ["msg"]}`, `{"non_field_errors": [...]}`, `{"detail": "..."}`) split for display. */
export function errorReport(body: unknown): ErrorReport {
  const report: ErrorReport = { fields: {}, general: [] };
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return report;
  for (const [key, value] of Object.entries(body as Record<string, unknown>)) {
    const messages = (Array.isArray(value) ? value : [value]).filter((m): m is string => typeof m === 'string');
    if (messages.length === 0) continue;
    if (key === 'non_field_errors' || key === 'detail') report.general.push(...messages);
    else report.fields[key] = messages;
  }
  return report;
}

/** The access decisions (docs/api.md), in words an administrator reads. */
export const REASONS: Record<string, string> = {
  feature_disabled: "Course access groups are off for the course's organization, so every learner may.",
  public: 'The course is public: every learner may.',
  no_access: 'The learner is anonymous, unknown or inactive, or in no group linked to this course.',
  staff: 'The learner is platform staff.',
  site_admin: "The learner is a site administrator of the course's organization.",
  group: 'The learner is a member of a group linked to this course.',
};

export const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
