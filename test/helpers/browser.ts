import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { CONSOLE_PREFIX } from '../../src/console/route';

/**
 * The end-to-end tests' browser: Debian's Chromium (scripts/browser.sh installs it), driven by
 * playwright-core, headless. Nothing is downloaded by Playwright.
 */
// Callbacks given to page.evaluate run in the browser; the Node program has no DOM types, so
// the few browser globals they use are declared here, for this module only.
declare const window: any;
declare const document: any;
declare const location: any;

export const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
export const CONSOLE_PATH = `${CONSOLE_PREFIX}/`;
const root = path.resolve(__dirname, '../..');
export const SCREENSHOTS = path.join(root, '.artifacts/screenshots');

/**
 * The console as `npm run build` makes it. scripts/test.sh builds it before jest; a direct
 * `npx jest test/e2e` after editing src/console/app rebuilds it here.
 */
export function ensureConsoleBuilt(): void {
  const source = path.join(root, 'src/console/app');
  const built = path.join(root, 'dist/console/main.js');
  const newest = Math.max(...readdirSync(source).map((f) => statSync(path.join(source, f)).mtimeMs));
  if (!existsSync(built) || statSync(built).mtimeMs < newest) {
    execFileSync(process.execPath, [path.join(root, 'scripts/build-console.cjs')], { stdio: 'inherit' });
  }
}

export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run \`bash scripts/browser.sh\` (apt-get install -y chromium)`);
  ensureConsoleBuilt();
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-quic',
    ],
  });
}

/** What went wrong in a page that no assertion looked for: dialogs (alert), script errors, CSP violations. */
export interface PageWatch {
  dialogs: string[];
  errors: string[];
  violations: () => Promise<string[]>;
}

/** Records dialogs (dismissed), uncaught errors and Content-Security-Policy violations of `page`. */
export async function watch(page: Page): Promise<PageWatch> {
  // A missing element fails its test well within jest's 30 s, with Playwright's own message.
  page.setDefaultTimeout(10000);
  const dialogs: string[] = [];
  const errors: string[] = [];
  page.on('dialog', (d) => {
    dialogs.push(`${d.type()}: ${d.message()}`);
    void d.dismiss();
  });
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/status of (400|401|403|404)/.test(m.text())) errors.push(m.text());
  });
  await page.addInitScript(() => {
    const w = window as unknown as { __violations: string[] };
    w.__violations = [];
    document.addEventListener('securitypolicyviolation', (e: { violatedDirective: string; blockedURI: string }) =>
      w.__violations.push(`${e.violatedDirective} ${e.blockedURI}`),
    );
  });
  return {
    dialogs,
    errors,
    violations: () => page.evaluate(() => (window as unknown as { __violations: string[] }).__violations ?? []),
  };
}

/** Opens the console and pastes `token` into its sign-in form (no link signs the console in). */
export async function pasteToken(page: Page, baseUrl: string, token: string): Promise<void> {
  await page.goto(`${baseUrl}${CONSOLE_PATH}`);
  const form = page.getByRole('form', { name: 'Sign in' });
  await form.getByLabel('Access token').fill(token);
  await form.getByRole('button', { name: 'Sign in' }).click();
}

/** Opens the console signed in with `token` (pasted), once its first page has loaded. */
export async function openConsole(page: Page, baseUrl: string, token: string): Promise<void> {
  await pasteToken(page, baseUrl, token);
  await page.getByRole('navigation', { name: 'Sections' }).waitFor();
  await settled(page);
}

/** Goes to a console page by its hash route and waits until its lists have loaded. */
export async function go(page: Page, hash: string): Promise<void> {
  await page.evaluate((h) => {
    location.hash = h;
  }, hash);
  await page.waitForFunction((h) => location.hash === h, hash);
  await settled(page);
}

/** Until nothing is loading: no aria-busy region, no "Loading…" line. */
export async function settled(page: Page): Promise<void> {
  await page.waitForFunction(
    () =>
      !document.querySelector('[aria-busy="true"]') &&
      ![...document.querySelectorAll('.list-status, .flag-state')].some((e: { textContent: string | null }) => (e.textContent ?? '').startsWith('Loading')),
  );
}

/** Waits for the page's notice line to say exactly `text`. */
export async function flashed(page: Page, text: string): Promise<void> {
  try {
    await page.waitForFunction((t) => document.getElementById('flash')?.textContent === t, text, { timeout: 10000 });
  } catch (err) {
    const actual = await page.evaluate(() => document.getElementById('flash')?.textContent);
    throw new Error(`expected the notice "${text}", got "${actual}"`, { cause: err });
  }
}

/** The text of the error line under the field named `name` of the form labelled `form`. */
export function fieldErrorText(page: Page, form: string, name: string): Promise<string> {
  return page.getByRole('form', { name: form }).locator(`.field[data-field="${name}"] .field-error`).innerText();
}

/** The open confirmation dialog's text. */
export async function dialogText(page: Page): Promise<string> {
  const dialog = page.getByRole('dialog');
  await dialog.waitFor();
  return dialog.innerText();
}

/**
 * Until the dialog has closed and left the page. A closed <dialog> is hidden at once, but its
 * `close` handler (which removes it and gives the focus back) runs a task later: waiting for the
 * role to go would read the focus too early.
 */
export async function dialogGone(page: Page): Promise<void> {
  await page.waitForFunction(() => document.querySelector('dialog') === null);
}

/** A PNG under .artifacts/screenshots/ (git-ignored): the whole page, or the window only (`fullPage: false`, for modals). */
export async function screenshot(page: Page, name: string, opts: { fullPage?: boolean } = {}): Promise<string> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const file = path.join(SCREENSHOTS, `${name}.png`);
  await page.screenshot({ path: file, fullPage: opts.fullPage ?? true });
  return file;
}

/** What has keyboard focus: its accessible label (aria-label, <label>) or its text. */
export function focused(page: Page): Promise<string> {
  return page.evaluate(() => {
    const el = document.activeElement;
    if (!el || el === document.body) return '';
    return el.getAttribute('aria-label') ?? el.labels?.[0]?.textContent ?? el.textContent?.trim() ?? '';
  });
}
