/* global document -- the functions given to page.evaluate run in the browser */
/**
 * Takes the screenshots in docs/dashboard.md: starts the built service (simulator, the default model: the v3 refiner,
 * a temp data folder, port 0) with a zone on its floor plan, signs in through the dashboard in
 * headless Chromium, lets the room run for a while and saves each tab on a 1440 x 900 screen
 * (`dashboard.png` the live view, `dashboard-system.png`, `dashboard-analytics.png`) and the live
 * view on a 390 x 844 phone (`dashboard-phone.png`).
 *
 * Usage: npm run screenshot   (= npm run build && node web/screenshot.mjs [--out DIR], default docs/)
 * Needs Chromium (Debian's `chromium`, or CHROMIUM_PATH).
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outFlag = process.argv.indexOf('--out');
const outDir = resolve(outFlag > 0 ? process.argv[outFlag + 1] : join(root, 'docs'));
const executablePath = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => p && existsSync(p));
if (!executablePath) throw new Error('no Chromium found: apt-get install chromium, or set CHROMIUM_PATH');

const { startApp } = await import(join(root, 'dist/src/app.js'));
const scratch = mkdtempSync(join(tmpdir(), 'csipose-shot-'));
const password = 'screenshot-password-1234';
const overlay = join(scratch, 'config.json');
writeFileSync(
  overlay,
  JSON.stringify({
    environment: {
      name: 'Simulated room',
      zones: [
        {
          id: 'sofa',
          name: 'Sofa',
          polygon: [
            [3.2, 2.2],
            [5.2, 2.2],
            [5.2, 3.6],
            [3.2, 3.6],
          ],
          severity: 'medium',
        },
      ],
    },
  }),
);
const app = await startApp({
  host: '127.0.0.1',
  port: 0,
  dataDir: join(scratch, 'data'),
  configFile: overlay,
  autostart: true,
  rateLimitScale: 1,
  env: { CSIPOSE_ADMIN_PASSWORD: password },
  log: () => undefined,
});
const browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
/** Saves the page as `name` in the output folder. */
async function shot(page, name) {
  const path = join(outDir, name);
  await page.screenshot({ path });
  process.stderr.write(`wrote ${path}\n`);
}

/** A signed-in page on a screen of the given size, showing at least two people. */
async function signedIn(viewport) {
  const page = await browser.newPage({ viewport });
  await page.goto(`http://127.0.0.1:${app.server.port}/`);
  await page.fill('#username', 'admin');
  await page.fill('#password', password);
  await page.click('#sign-in');
  await page.waitForFunction(() => Number(document.querySelector('#view')?.dataset.persons) >= 2, undefined, { timeout: 60_000 });
  return page;
}

const twoInView = (page) => page.waitForFunction(() => Number(document.querySelector('#view')?.dataset.persons) >= 2, undefined, { timeout: 60_000 });

try {
  const page = await signedIn({ width: 1440, height: 900 });
  // Long enough for trails on the floor plan, alerts in the feed, and a few minutes' analytics.
  await page.waitForTimeout(20_000);
  await page.waitForSelector('#alerts li', { timeout: 60_000 });
  await twoInView(page);
  await shot(page, 'dashboard.png');
  await page.click('#tab-system');
  await page.waitForSelector('tr[data-figure=cpu_usage]');
  await shot(page, 'dashboard-system.png');
  await page.click('#tab-analytics');
  await page.waitForFunction(() => document.querySelector('.analytics .toolbar .form-message')?.textContent?.startsWith('Updated'));
  await page.waitForSelector('#occupancy-chart canvas');
  await shot(page, 'dashboard-analytics.png');
  await page.close();
  const phone = await signedIn({ width: 390, height: 844 });
  await phone.waitForTimeout(3000);
  await twoInView(phone);
  await shot(phone, 'dashboard-phone.png');
} finally {
  await browser.close();
  await app.close();
  rmSync(scratch, { recursive: true, force: true });
}
