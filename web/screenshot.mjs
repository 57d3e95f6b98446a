/**
 * Takes the screenshot of the live view in docs/dashboard.md: starts the built service (simulator,
 * shipped model, a temp data folder, port 0) with a zone on its floor plan, signs in through the
 * dashboard in headless Chromium, lets the room run for a few seconds and saves the page.
 *
 * Usage: npm run screenshot   (= npm run build && node web/screenshot.mjs [--out FILE])
 * Needs Chromium (Debian's `chromium`, or CHROMIUM_PATH).
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outFlag = process.argv.indexOf('--out');
const out = resolve(outFlag > 0 ? process.argv[outFlag + 1] : join(root, 'docs', 'dashboard.png'));
const executablePath = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => p && existsSync(p));
if (!executablePath) throw new Error('no Chromium found: apt-get install chromium, or set CHROMIUM_PATH');

const { startApp } = await import(join(root, 'dist/src/app.js'));
const scratch = mkdtempSync(join(tmpdir(), 'csipose-shot-'));
const password = 'screenshot-password-1234';
const overlay = join(scratch, 'config.json');
writeFileSync(
  overlay,
  JSON.stringify({
    environment: { name: 'Simulated room', zones: [{ id: 'sofa', name: 'Sofa', polygon: [[3.2, 2.2], [5.2, 2.2], [5.2, 3.6], [3.2, 3.6]], severity: 'medium' }] },
    neural_network: { model_path: join(root, 'models/csipose-pose.onnx') },
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
try {
  const page = await browser.newPage({ viewport: { width: 1440, height: 860 } });
  await page.goto(`http://127.0.0.1:${app.server.port}/`);
  await page.fill('#username', 'admin');
  await page.fill('#password', password);
  await page.click('#sign-in');
  await page.waitForFunction(() => Number(document.querySelector('#view')?.dataset.persons) >= 2, undefined, { timeout: 60_000 });
  // Long enough for trails on the floor plan, and an alert or two in the feed.
  await page.waitForTimeout(6000);
  await page.waitForSelector('#alerts li', { timeout: 60_000 });
  await page.waitForFunction(() => Number(document.querySelector('#view')?.dataset.persons) >= 2, undefined, { timeout: 60_000 });
  await page.screenshot({ path: out });
  process.stderr.write(`wrote ${out}\n`);
} finally {
  await browser.close();
  await app.close();
  rmSync(scratch, { recursive: true, force: true });
}
