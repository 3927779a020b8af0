/** The console's shell: sign-in, the header (who is signed in, until when), navigation, pages. */
import * as api from './api.js';
import { ApiError, SignedOut } from './api.js';
import { h, replace } from './dom.js';
import { accessPage } from './page-access.js';
import { coursesPage } from './page-courses.js';
import { groupPage } from './page-group.js';
import { groupsPage } from './page-groups.js';
import { overviewPage } from './page-overview.js';
import { rulesPage } from './page-rules.js';
import { usersPage } from './page-users.js';
import * as session from './session.js';
import { beginLmsSignIn, consoleConfig, exchangeLmsToken, finishLmsSignIn, type LmsSignIn, lmsSignIn, loginUrl } from './sign-in-config.js';
import { type Claims, carriesToken, parseToken, relativeExpiry, roleLabel } from './token.js';
import { actionForm, clearFlash, field, selectField, submit, text, textArea } from './ui.js';

interface Route {
  title: string;
  nav: string;
  page: (match: RegExpMatchArray) => HTMLElement;
}

const ROUTES: [RegExp, Route][] = [
  [/^#\/overview$/, { title: 'Overview', nav: 'overview', page: overviewPage }],
  [/^#\/groups$/, { title: 'Groups', nav: 'groups', page: groupsPage }],
  [/^#\/groups\/(\d{1,15})$/, { title: 'Group', nav: 'groups', page: (m) => groupPage(Number(m[1])) }],
  [/^#\/courses$/, { title: 'Courses', nav: 'courses', page: coursesPage }],
  [/^#\/users$/, { title: 'Users', nav: 'users', page: usersPage }],
  [/^#\/rules$/, { title: 'Membership rules', nav: 'rules', page: rulesPage }],
  [/^#\/access$/, { title: 'Access check', nav: 'access', page: accessPage }],
];
const NAV: [string, string][] = [
  ['overview', 'Overview'],
  ['groups', 'Groups'],
  ['courses', 'Courses'],
  ['users', 'Users'],
  ['rules', 'Rules'],
  ['access', 'Access check'],
];

const root = document.getElementById('app')!;
let identityTimer: number | undefined;
/** The sign-in through the LMS, when the service offers it; `lmsKnown` once config.json has answered. */
let lms: LmsSignIn | null = null;
let lmsKnown = false;

function route(): { route: Route; match: RegExpMatchArray } {
  for (const [pattern, r] of ROUTES) {
    const match = location.hash.match(pattern);
    if (match) return { route: r, match };
  }
  return { route: ROUTES[0]![1], match: ['#/overview'] as unknown as RegExpMatchArray };
}

// --- signed out ------------------------------------------------------------------------------

function showSignIn(message: string | null): void {
  window.clearInterval(identityTimer);
  if (!lmsKnown) void learnLmsSignIn();
  document.title = 'Sign in · Course Access Groups console';
  const form = actionForm(
    { label: 'Sign in' },
    [
      textArea({
        name: 'token',
        label: 'Access token',
        rows: 4,
        help: 'A token of this service’s own keys, or the LMS’s JWT (the service trades it for the console’s own: the LMS’s is never kept here). It stays in this tab only (sessionStorage) until you sign out or close it.',
      }),
      h('div', { class: 'actions' }, submit('Sign in')),
    ],
    async (data, f) => {
      const problem = session.start(await keepable(text(data, 'token')));
      if (problem) throw new ApiError(400, { token: [problem] }, problem);
      f.reset();
      await enter();
    },
  );
  const viaLms = lms
    ? [
        h(
          'p',
          null,
          h(
            'a',
            {
              class: 'btn btn-primary',
              href: loginUrl(lms, '#/overview'),
              onclick: (e: Event) => {
                e.preventDefault();
                beginLmsSignIn(lms!, '#/overview');
              },
            },
            'Sign in with the LMS',
          ),
        ),
        h('p', null, 'You sign in on the LMS with your LMS account; the LMS sends you back here. Or paste a token:'),
      ]
    : [h('p', null, 'Paste a token to sign in.')];
  replace(
    root,
    h(
      'main',
      { id: 'main', class: 'signin', tabindex: '-1' },
      h('h1', null, 'Course Access Groups console'),
      message ? h('p', { class: 'flash flash-error', role: 'alert' }, message) : null,
      viaLms,
      h('section', { class: 'card' }, form),
      h('p', { class: 'muted small' }, 'Developers: ', h('code', null, 'npm run token -- --site-admin <org>'), ' prints a token for the local service.'),
    ),
  );
}

/**
 * A pasted token as this tab may keep it: the LMS's own JWT (by its issuer) is traded for the
 * console's token, or refused when the service cannot trade it; any other token as it is (the
 * session says what is wrong with it).
 */
async function keepable(raw: string): Promise<string> {
  const parsed = parseToken(raw);
  if (!parsed.ok) return raw;
  const refuse = (why: string) => new ApiError(400, { token: [why] }, why);
  // Without the service's answer the page cannot tell the LMS's token from another: it keeps none.
  const config = await consoleConfig();
  if (config === null) throw refuse('The service cannot be reached. Check the connection and try again.');
  if (!config.lmsIssuers.includes(parsed.claims.issuer ?? '')) return parsed.token;
  if (!config.exchange) {
    throw refuse(
      'This is the LMS’s own token, which opens every Open edX service: the console does not keep it. Sign in with the LMS (the service’s LMS_OAUTH_* settings), or paste a token of this service’s own keys.',
    );
  }
  const traded = await exchangeLmsToken(config.exchange, parsed.token);
  if ('error' in traded) throw refuse(traded.error);
  return traded.token;
}

/**
 * Whether the stored token can administer its organization: 'ok', 'gone' (a 401 already put
 * the sign-in page up with the service's reason), or why not.
 */
async function verify(): Promise<'ok' | 'gone' | string> {
  const claims = session.claims();
  if (!claims) return 'gone';
  if (!claims.staff && !claims.siteAdmin) return 'This token is neither a site administrator’s nor platform staff’s; the console cannot use it.';
  if (!session.organization()) return 'ok'; // staff choose an organization first
  try {
    await api.get('site-configuration/');
    return 'ok';
  } catch (err) {
    if (err instanceof SignedOut) return 'gone';
    if (err instanceof ApiError && err.status === 403) return `The service refused this token for ${session.organization()}: ${err.report.general.join(' ')}`;
    return 'ok'; // the service is down or slow: the pages will say so
  }
}

/** After a token was stored: the console, or the sign-in page saying why not. */
async function enter(): Promise<void> {
  const verdict = await verify();
  if (verdict === 'gone') return;
  if (verdict !== 'ok') return session.end(verdict);
  showConsole(true);
}

// --- signed in -------------------------------------------------------------------------------

function identity(): HTMLElement {
  const c = session.claims()!;
  const org = session.organization();
  const expiry = new Date(c.exp * 1000);
  const line = h('p', { class: 'who' });
  const update = () =>
    replace(
      line,
      h('span', null, `User ${c.userId}`),
      h('span', null, c.staff ? roleLabel(c) : `${roleLabel(c)} of ${org ?? '(no organization chosen)'}`),
      h(
        'span',
        null,
        'Token expires ',
        h('time', { datetime: expiry.toISOString() }, expiry.toLocaleString([], { dateStyle: 'medium', timeStyle: 'short' })),
        ` (${relativeExpiry(c.exp, Date.now() / 1000)})`,
      ),
    );
  update();
  window.clearInterval(identityTimer);
  identityTimer = window.setInterval(update, 30000);
  return line;
}

function organizationPicker(c: Claims): HTMLElement {
  // Staff may name any organization; an LMS administrator of several picks one of theirs.
  const choice = c.staff
    ? field({ name: 'organization', label: 'Organization', value: session.organization() ?? '', help: 'Platform staff: the organization to work on.' })
    : selectField({
        name: 'organization',
        label: 'Organization',
        options: [['', 'Choose one…'], ...c.administeredOrgs.map((org): [string, string] => [org, org])],
        value: session.organization() ?? '',
        help: 'The organizations you administer: the console works on one at a time.',
      });
  return actionForm(
    { label: 'Organization', class: 'org-picker' },
    [choice, h('div', { class: 'actions' }, submit('Switch', 'plain', 'Switch organization'))],
    async (data) => {
      session.chooseOrganization(text(data, 'organization').trim());
      showConsole(false);
    },
  );
}

function showConsole(focusHeading: boolean): void {
  const c = session.claims();
  if (!c) {
    showSignIn(null);
    return;
  }
  const current = route();
  const signOut = h('button', { type: 'button', class: 'btn btn-plain', onclick: signOutNow }, 'Sign out');
  const skip = h('button', { type: 'button', class: 'skip', onclick: () => document.querySelector<HTMLElement>('main h1')?.focus() }, 'Skip to content');
  const nav = h(
    'nav',
    { class: 'nav', 'aria-label': 'Sections' },
    h(
      'ul',
      null,
      NAV.map(([key, label]) => h('li', null, h('a', { href: `#/${key}`, 'aria-current': key === current.route.nav ? 'page' : null }, label))),
    ),
  );
  const main = h('main', { id: 'main', tabindex: '-1' }, h('p', { id: 'flash', class: 'flash', role: 'status', 'aria-live': 'polite' }));
  if (session.choosesOrganization(c) && !session.organization()) {
    const why = c.staff
      ? 'Platform staff work on one organization at a time'
      : `You administer ${c.administeredOrgs.join(', ')}; the console works on one at a time`;
    main.append(h('h1', { tabindex: '-1' }, 'Choose an organization'), h('p', null, `${why}: ${c.staff ? 'enter its id' : 'choose it'} above.`));
  } else {
    main.append(current.route.page(current.match));
  }
  document.title = `${current.route.title} · Course Access Groups console`;
  replace(
    root,
    skip,
    h(
      'header',
      { class: 'top' },
      h('div', { class: 'bar' }, h('a', { class: 'brand', href: '#/overview' }, 'Course Access Groups'), identity(), signOut),
      session.choosesOrganization(c) ? organizationPicker(c) : null,
      nav,
    ),
    main,
  );
  if (focusHeading) main.querySelector<HTMLElement>('h1')?.focus();
}

/**
 * Forgets the token; a token from the sign-in through the LMS also ends the LMS session (the
 * LMS's /logout), else the next "Sign in with the LMS" would come straight back signed in.
 */
function signOutNow(): void {
  const viaLms = session.viaLms();
  session.end('You signed out.');
  if (viaLms && lms) location.assign(lms.logout);
}

// --- start -----------------------------------------------------------------------------------

session.onEnd((message) => showSignIn(message));
window.addEventListener('hashchange', () => {
  if (carriesToken(location.hash)) return void dropLinkedToken();
  if (!session.token()) return;
  clearFlash();
  showConsole(true);
});

/**
 * Asks the service once whether it offers the sign-in through the LMS. Only what needs the answer
 * asks: the sign-in page (its main button) and a token from that sign-in (its renewal and
 * sign-out), so a pasted or linked token of the service's own costs no extra request.
 */
let asked: Promise<LmsSignIn | null> | null = null;
function learnLmsSignIn(): Promise<LmsSignIn | null> {
  asked ??= lmsSignIn().then((found) => {
    lms = found;
    lmsKnown = true;
    // A sign-in page shown before the answer gains its "Sign in with the LMS".
    const signInPage = root.querySelector('main.signin');
    if (found && signInPage && !session.token()) showSignIn(signInPage.querySelector('.flash-error')?.textContent ?? null);
    // Before the token expires, through the LMS again: with the LMS session alive it answers at
    // once (a top-level redirect: the LMS forbids framing), back to the page the user was on.
    if (found) session.onRenewalDue(() => beginLmsSignIn(found, location.hash));
    return found;
  });
  return asked;
}

/**
 * A `#token=` link (an old sign-in link, or one made to sign this browser in as someone else)
 * signs nothing in: the token leaves the address bar (and the history), and is never read.
 */
function dropLinkedToken(): boolean {
  if (!carriesToken(location.hash)) return false;
  history.replaceState(null, '', `${location.pathname}${location.search}#/overview`);
  if (!session.token()) showSignIn('Sign-in links are not accepted: sign in here.');
  return true;
}

async function start(): Promise<void> {
  if (dropLinkedToken()) {
    if (!session.token()) return void learnLmsSignIn();
  }
  // The LMS's page (or any link to oauth/login) asks this tab to start the sign-in through the LMS.
  if (new URLSearchParams(location.search).get('sign-in') === 'lms') {
    history.replaceState(null, '', `${location.pathname}${location.hash}`);
    const offer = await learnLmsSignIn();
    if (offer) return beginLmsSignIn(offer, location.hash || '#/overview');
  }
  // Back from the LMS: the sign-in this tab started, if it started one.
  const finished = await finishLmsSignIn();
  if (finished !== null && 'token' in finished) {
    void learnLmsSignIn();
    const problem = session.start(finished.token, 'lms');
    if (problem) return showSignIn(problem);
    return enter();
  }
  // An abandoned sign-in (the back button) leaves the tab's session as it was.
  const resumed = session.resume();
  if (!resumed.ok) {
    await learnLmsSignIn(); // no sign-in page without its main button while the answer is coming
    return showSignIn(finished?.error ?? resumed.message);
  }
  if (session.viaLms()) void learnLmsSignIn();
  showConsole(false);
}

void start();
