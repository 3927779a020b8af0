/**
 * Literal search in MongoDB (and FerretDB) filters: what a user types is matched as text, never
 * as a pattern.
 */

/** Search terms: split on spaces and commas, empty ones dropped. */
export function searchTerms(raw: string | undefined): string[] {
  return (raw ?? '').split(/[\s,]+/).filter(Boolean);
}

/** `text` as a regular expression that matches exactly those characters, on MongoDB (PCRE) and FerretDB (Go RE2). */
export function literalPattern(text: string): string {
  return text.replace(/[\\^$.|?*+()[\]{}]/g, '\\$&').replace(/\0/g, '\\x00');
}

/**
 * The filter for a multi-term search: every term must match (case-insensitively, as a literal
 * substring) at least one of `fields`. No terms, no condition.
 */
export function searchFilter(fields: readonly string[], raw: string | undefined): Record<string, unknown> {
  const terms = searchTerms(raw);
  if (terms.length === 0) return {};
  return {
    $and: terms.map((term) => ({
      $or: fields.map((field) => ({ [field]: { $regex: literalPattern(term), $options: 'i' } })),
    })),
  };
}
