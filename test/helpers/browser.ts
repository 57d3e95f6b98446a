/**
 * A real browser for the dashboard tests: Debian's `chromium` (installed by `.ci/run`), headless,
 * driven by playwright-core. Tests skip, saying why, only when no Chromium is installed.
 *
 * @example
 * const browser = await launchBrowser();
 * const page = await browser.newPage();
 * await signIn(page, s.base, { username: 'admin', password: ADMIN_PASSWORD });
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';

const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome', '/usr/bin/google-chrome-stable'];

/** The Chromium to run: `$CHROMIUM_PATH`, else the first of the usual paths that exists. */
export const CHROMIUM: string | undefined = [process.env.CHROMIUM_PATH, ...CANDIDATES].find((p): p is string => !!p && existsSync(p));

/** Why the browser tests are skipped, when they are. */
export const NO_BROWSER = CHROMIUM
  ? undefined
  : `dashboard browser tests skipped: no Chromium at ${CANDIDATES.join(', ')} (install Debian's package: apt-get install chromium, or set CHROMIUM_PATH)`;

/** Launches headless Chromium (one per test file). */
export function launchBrowser(): Promise<Browser> {
  if (!CHROMIUM) throw new Error(NO_BROWSER);
  // --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
}

export type Credential = { username: string; password: string } | { apiKey: string };

/**
 * Opens the dashboard and signs in through its form.
 * @param page a fresh page
 * @param base `http://127.0.0.1:PORT`
 * @param who a username and password, or an API key
 */
export async function signIn(page: Page, base: string, who: Credential): Promise<void> {
  await page.goto(`${base}/`);
  if ('apiKey' in who) {
    await page.click('button[data-mode=key]');
    await page.fill('#apikey', who.apiKey);
  } else {
    await page.fill('#username', who.username);
    await page.fill('#password', who.password);
  }
  await page.click('#sign-in');
  await page.waitForSelector('#role');
}

/** The pixels of a canvas, as a data URL (equal strings, equal pixels). */
export function canvasPixels(page: Page, selector: string): Promise<string> {
  return page.$eval(selector, (c) => (c as HTMLCanvasElement).toDataURL('image/png'));
}
