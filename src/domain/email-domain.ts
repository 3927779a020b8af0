/** Domains are compared and stored lowercase (docs/api.md). */
export const ruleDomain = (domain: string) => domain.toLowerCase();

/** The domain a rule matches: what follows the last `@`, lowercased. */
export function emailDomain(email: string): string | null {
  const at = email.lastIndexOf('@');
  const domain = ruleDomain(email.slice(at + 1).trim());
  return at < 0 || domain === '' ? null : domain;
}
