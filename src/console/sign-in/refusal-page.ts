import { CONSOLE_PREFIX } from '../route';

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/**
 * The page a refused sign-in ends on: what happened and what to do, as text (no script, the
 * console's stylesheet, under the console's headers). `retry` offers the sign-in again.
 */
export function refusalPage(o: { title: string; why: string; retry: boolean }): string {
  const links = [
    o.retry ? `<a class="btn" href="${CONSOLE_PREFIX}/oauth/login">Sign in with the LMS again</a>` : '',
    `<a href="${CONSOLE_PREFIX}/">Back to the console</a>`,
  ].filter(Boolean);
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <meta name="referrer" content="no-referrer">
  <title>${escapeHtml(o.title)} · Course Access Groups console</title>
  <link rel="stylesheet" href="${CONSOLE_PREFIX}/console.css">
</head>
<body>
  <main id="main" class="signin">
    <h1>${escapeHtml(o.title)}</h1>
    <p class="flash flash-error" role="alert" id="refusal">${escapeHtml(o.why)}</p>
    <p>${links.join(' ')}</p>
  </main>
</body>
</html>
`;
}
