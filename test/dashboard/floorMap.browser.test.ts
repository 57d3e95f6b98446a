/**
 * The floor map under the floor plan, in a real browser (headless Chromium, playwright-core)
 * against the real service on port 0 running `physics-live` with the shipped v3 refiner and the
 * simulator: the heat layer is drawn from `GET /pose/floor-map` (the plan's room turns from its
 * bare floor colour to the map's), follows the service's newer maps, and goes when toggled off.
 * The v2 model's side (no front end: no legend, no layer) is in browser.test.ts.
 * Assertions wait for behaviour (an attribute, changed pixels), never for a time.
 */
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM, launchBrowser, NO_BROWSER, signIn } from '../helpers/browser.js';
import { repoRoot } from '../helpers/cli.js';
import { ADMIN_PASSWORD, startServer, waitForStatus, type TestServer } from '../helpers/server.js';

if (NO_BROWSER) console.warn(NO_BROWSER);

/** The room's floor on the plan (floorplan.ts), as RGB. */
const ROOM_FILL = [19, 26, 35];

/** How many pixels of the floor plan are the room's bare floor colour. */
function bareFloor(page: Page): Promise<number> {
  return page.$eval(
    '#floor',
    (c, fill) => {
      const canvas = c as HTMLCanvasElement;
      const px = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height).data;
      let n = 0;
      for (let i = 0; i < px.length; i += 4) if (px[i] === fill[0] && px[i + 1] === fill[1] && px[i + 2] === fill[2]) n++;
      return n;
    },
    ROOM_FILL,
  );
}

describe.skipIf(!CHROMIUM)('the floor map in the dashboard (v3 refiner)', () => {
  let s: TestServer;
  let browser: Browser;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    [s, browser] = await Promise.all([
      startServer({ autostart: true, rateLimitScale: 100, config: { neural_network: { model_path: join(repoRoot, 'models/csipose-refiner.onnx') } } }),
      launchBrowser(),
    ]);
    if (!s.app.server.dashboard) throw new Error('no dashboard build in dist/web: run npm run build first');
    await waitForStatus(s, await s.login(), 'running');
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await s?.close();
    expect(pageErrors).toEqual([]);
  });

  it("draws the front end's map as a heat layer under the plan, follows newer maps, and hides it when toggled off", async () => {
    const page = await browser.newPage({ viewport: { width: 1360, height: 860 } });
    page.setDefaultTimeout(25_000);
    page.on('pageerror', (e) => pageErrors.push(e.message));
    await signIn(page, s.base, { username: 'admin', password: ADMIN_PASSWORD });

    // The legend appears with the first map, and the plan says which map it drew.
    await page.waitForSelector('#heat-legend:not([hidden])');
    await page.waitForFunction(
      () =>
        document.querySelector<HTMLElement>('#heat-legend')?.dataset.state === 'shown' && !!document.querySelector<HTMLCanvasElement>('#floor')?.dataset.heat,
    );
    const first = (await page.getAttribute('#floor', 'data-heat'))!;
    expect(Date.parse(first)).toBeGreaterThan(0);
    expect(await page.textContent('#heat-info')).toMatch(/· 3 links/);

    // The map the page drew is the service's: the service has it, or a newer one.
    const token = await s.login();
    const served = (await s.api('GET', '/pose/floor-map', { token })).body.data;
    expect(Date.parse(served.timestamp)).toBeGreaterThanOrEqual(Date.parse(first));

    // Newer maps replace it (one read a second).
    await page.waitForFunction((prev) => {
      const at = document.querySelector<HTMLCanvasElement>('#floor')?.dataset.heat ?? '';
      return !!at && Date.parse(at) > Date.parse(prev);
    }, first);

    // The heat covers the room: with it, little of the bare floor colour is left; toggled off, the
    // bare floor comes back (people and trails move meanwhile, but cover only a few pixels).
    const withHeat = await bareFloor(page);
    await page.click('#heat-toggle');
    await page.waitForFunction(() => document.querySelector<HTMLCanvasElement>('#floor')?.dataset.heat === '');
    expect(await page.getAttribute('#heat-legend', 'data-state')).toBe('off');
    await page.waitForFunction(
      ({ before, fill }) => {
        const canvas = document.querySelector<HTMLCanvasElement>('#floor')!;
        const px = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height).data;
        let n = 0;
        for (let i = 0; i < px.length; i += 4) if (px[i] === fill[0] && px[i + 1] === fill[1] && px[i + 2] === fill[2]) n++;
        // The room is most of the canvas: its bare floor at least doubles, by a fifth of the canvas at least.
        return n > 2 * before && n - before > (canvas.width * canvas.height) / 5;
      },
      { before: withHeat, fill: ROOM_FILL },
    );

    // And back on: the layer returns.
    await page.click('#heat-toggle');
    await page.waitForFunction(() => !!document.querySelector<HTMLCanvasElement>('#floor')?.dataset.heat);
    expect(await page.getAttribute('#heat-legend', 'data-state')).toBe('shown');
    await page.close();
  });
});
