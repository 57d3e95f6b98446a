/**
 * The dashboard in a real browser (headless Chromium, playwright-core) against the real service on
 * port 0 running the live pipeline (simulator, shipped model): sign-in, skeletons drawn from the
 * stream, a scripted alert, reconnecting, the configuration form's server-side validation, system
 * control as an operator and as a viewer, token refresh and session end, analytics. One server
 * and one browser for the file; each test has its own browser context (its own sessionStorage).
 * Assertions wait for behaviour (an element, a text, changed pixels), never for a time.
 */
import { randomBytes } from 'node:crypto';
import { SignJWT } from 'jose';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { canvasPixels, CHROMIUM, launchBrowser, NO_BROWSER, signIn } from '../helpers/browser.js';
import { ADMIN_PASSWORD, JWT_SECRET, startServer, until, waitForStatus, type TestServer } from '../helpers/server.js';
import { ROOM_ZONE } from '../helpers/zones.js';

if (NO_BROWSER) console.warn(NO_BROWSER);

/** A zone over the whole floor plan: every tracked person in it raises a critical intrusion alert. */
const EVERYWHERE = { ...ROOM_ZONE, id: 'everywhere', severity: 'critical' };

describe.skipIf(!CHROMIUM)('dashboard in a browser', () => {
  let s: TestServer;
  let browser: Browser;
  let admin: string;
  const contexts: BrowserContext[] = [];
  const pageErrors: string[] = [];

  /** A fresh page in its own context (1360 x 860 unless told); uncaught page errors fail the test. */
  async function open(viewport = { width: 1360, height: 860 }): Promise<Page> {
    const ctx = await browser.newContext({ viewport });
    contexts.push(ctx);
    const page = await ctx.newPage();
    page.setDefaultTimeout(25_000);
    page.on('pageerror', (e) => pageErrors.push(e.message));
    return page;
  }

  /** Waits until the view shows a frame other than `after` with someone in it; returns its id. */
  async function nextFrameWithPeople(page: Page, after = ''): Promise<string> {
    await page.waitForFunction((prev) => {
      const v = document.querySelector<HTMLCanvasElement>('#view');
      return !!v && v.dataset.frame !== prev && !!v.dataset.frame && Number(v.dataset.persons) > 0;
    }, after);
    return (await page.getAttribute('#view', 'data-frame'))!;
  }

  const text = async (page: Page, sel: string) => ((await page.textContent(sel)) ?? '').trim();

  beforeAll(async () => {
    [s, browser] = await Promise.all([
      startServer({ model: true, autostart: true, rateLimitScale: 100, config: { streaming: { status_interval_seconds: 1 } } }),
      launchBrowser(),
    ]);
    if (!s.app.server.dashboard) throw new Error('no dashboard build in dist/web: run npm run build first');
    admin = await s.login();
  });
  afterEach(async () => {
    for (const c of contexts.splice(0)) await c.close();
    expect(pageErrors.splice(0)).toEqual([]);
  });
  afterAll(async () => {
    await browser?.close();
    await s?.close();
  });

  it('signs in with a password, keeps credentials out of the address, draws skeletons from the live stream, signs out', async () => {
    const page = await open();
    let floorMapReads = 0;
    page.on('request', (r) => {
      if (r.url().includes('/api/v1/pose/floor-map')) floorMapReads++;
    });
    await page.goto(`${s.base}/`);
    await page.fill('#username', 'admin');
    await page.fill('#password', 'not-the-password');
    await page.click('#sign-in');
    await page.waitForFunction(() => document.querySelector('#signin-error')?.textContent === 'Wrong username or password.');

    await page.fill('#password', ADMIN_PASSWORD);
    await page.click('#sign-in');
    await page.waitForSelector('#role');
    expect(await text(page, '#role')).toBe('admin');
    expect(page.url()).toBe(`${s.base}/`);

    // Skeletons from the stream: the canvas shows people, and its pixels change with the next frame.
    // The frame id and the pixels are read together (one evaluate: no redraw in between), so that
    // a frame drawn while the test reads cannot pass for the next one.
    const shown = () => page.$eval('#view', (c) => ({ frame: (c as HTMLCanvasElement).dataset.frame ?? '', png: (c as HTMLCanvasElement).toDataURL() }));
    await nextFrameWithPeople(page);
    const before = await shown();
    await nextFrameWithPeople(page, before.frame);
    const after = await shown();
    expect(after.frame).not.toBe(before.frame);
    expect(after.png).not.toBe(before.png);
    // The view has the proportions of the environment's reference view (its pixels follow its size on screen).
    const view = (await s.api('GET', '/config', { token: admin, form: 'a' })).body.environment.view;
    const canvas = await page.$eval('#view', (c) => ({
      w: (c as HTMLCanvasElement).width,
      h: (c as HTMLCanvasElement).height,
      vw: Number(c.dataset.viewWidth),
      vh: Number(c.dataset.viewHeight),
    }));
    expect([canvas.vw, canvas.vh]).toEqual([view.width, view.height]);
    expect(Math.abs(canvas.w / canvas.h - view.width / view.height)).toBeLessThan(0.01);
    await page.waitForFunction(() => document.querySelector('#conn')?.textContent === 'live');
    await page.waitForFunction(
      () =>
        /^\d+(\.\d)? frames\/s$/.test(document.querySelector('#fps')?.textContent ?? '') &&
        /\d+ ms latency/.test(document.querySelector('#latency')?.textContent ?? ''),
    );
    expect(await canvasPixels(page, '#floor')).not.toBe(await page.evaluate(() => document.createElement('canvas').toDataURL()));
    // The header's count, in words: "1 person", "2 persons".
    const count = await text(page, '#persons');
    const n = Number.parseInt(count, 10);
    expect(count).toBe(n === 1 ? '1 person' : `${n} persons`);

    // The v2 model has no physics front end: the floor map's answer (404 no_front_end) leaves no
    // legend and no layer, and the page stops asking: by the next links read (5 s) a poll (once a
    // second) would have asked 4 times more; the stream's first status may ask once more.
    await page.waitForFunction(() => document.querySelector<HTMLElement>('#heat-legend')?.dataset.state === 'unavailable');
    expect(await page.isHidden('#heat-legend')).toBe(true);
    expect(await page.getAttribute('#floor', 'data-heat')).toBe('');
    const reads = floorMapReads;
    const linksAt = (await page.getAttribute('#floor-links', 'data-at')) ?? '';
    await page.waitForFunction((at) => (document.querySelector<HTMLElement>('#floor-links')?.dataset.at ?? '') !== at, linksAt);
    expect(floorMapReads - reads).toBeLessThanOrEqual(1);
    expect(await page.getAttribute('#heat-legend', 'data-state')).toBe('unavailable');

    // Signing out revokes the session's tokens and forgets them.
    const stored = JSON.parse((await page.evaluate(() => sessionStorage.getItem('csipose.session')))!);
    expect((await s.api('GET', '/system/status', { token: stored.access })).status).toBe(200);
    await page.click('#sign-out');
    await page.waitForSelector('#signin');
    expect(await text(page, '#signin-error')).toBe('Signed out.');
    expect(await page.evaluate(() => sessionStorage.getItem('csipose.session'))).toBeNull();
    expect((await s.api('GET', '/system/status', { token: stored.access })).status).toBe(401);
  });

  it('shows a scripted alert in the feed, with the critical cue', async () => {
    const page = await open();
    await signIn(page, s.base, { username: 'admin', password: ADMIN_PASSWORD });
    await nextFrameWithPeople(page);
    // The script: a critical zone over the whole room, added live; everyone tracked in it raises an alert.
    const put = await s.api('PUT', '/config', { token: admin, body: { environment: { zones: [EVERYWHERE] } } });
    expect(put.status, put.text).toBe(200);
    try {
      const item = page.locator('#alerts li[data-severity=critical]').first();
      await item.waitFor();
      expect(await item.textContent()).toMatch(/critical.*intrusion · #\d+.*Whole room \(-?\d+(\.\d)? m, -?\d+(\.\d)? m\)/);
      await page.waitForSelector('#critical-banner:not([hidden])');
      expect(await text(page, '#critical-banner')).toMatch(/^Critical alert: intrusion of #\d+ at Whole room/);
      // Dismiss hides the banner. Read in the click's own task: the zone keeps raising alerts for
      // people newly tracked in it, and each new critical alert shows the banner again.
      const hiddenAfterClick = await page.evaluate(() => {
        document.querySelector<HTMLButtonElement>('#critical-banner button')!.click();
        return document.querySelector<HTMLElement>('#critical-banner')!.hidden;
      });
      expect(hiddenAfterClick).toBe(true);
    } finally {
      await s.api('PUT', '/config', { token: admin, body: { environment: { zones: [] } } });
    }
  });

  it('reconnects by itself when the server drops the stream', async () => {
    const page = await open();
    await signIn(page, s.base, { username: 'admin', password: ADMIN_PASSWORD });
    await nextFrameWithPeople(page);
    // Switching WebSocket streaming off closes every connection (1001) and refuses new ones.
    expect((await s.api('PUT', '/config', { token: admin, body: { streaming: { websocket_enabled: false } } })).status).toBe(200);
    try {
      await page.waitForFunction(() => document.querySelector('#conn')?.textContent?.startsWith('reconnecting'));
    } finally {
      expect((await s.api('PUT', '/config', { token: admin, body: { streaming: { websocket_enabled: true } } })).status).toBe(200);
    }
    await page.waitForFunction(() => document.querySelector('#conn')?.textContent === 'live');
    await nextFrameWithPeople(page);
  });

  it("shows the server's field-level validation message and saves a valid change", async () => {
    const page = await open();
    await signIn(page, s.base, { username: 'admin', password: ADMIN_PASSWORD });
    await page.click('#tab-system');
    await page.click('details[data-group=detection] > summary');
    const threshold = page.locator('[name="detection.confidence_threshold"]');
    const original = await threshold.inputValue();
    await threshold.fill('1.5');
    await page.click('#config-form button[type=submit]');
    const error = page.locator('.field[data-path="detection.confidence_threshold"] .field-error');
    await page.waitForFunction(() => !!document.querySelector('.field[data-path="detection.confidence_threshold"] .field-error')?.textContent);
    // Word for word what the server says about that field.
    const direct = await s.api('PUT', '/config', { token: admin, form: 'a', body: { detection: { confidence_threshold: 1.5 } } });
    expect(direct.status).toBe(422);
    expect(await error.textContent()).toBe(direct.body.error.details.field_errors[0].message);
    expect(await text(page, '.config .form-message')).toMatch(/refused a field; nothing was changed/);
    expect((await s.api('GET', '/config', { token: admin, form: 'a' })).body.detection.confidence_threshold).toBe(Number(original));

    await threshold.fill(original);
    await page.fill('[name="detection.max_persons"]', '3');
    await page.click('#config-form button[type=submit]');
    await page.waitForFunction(() => document.querySelector('.config .form-message')?.textContent?.startsWith('Saved: detection.max_persons'));
    expect(await error.textContent()).toBe('');
    expect((await s.api('GET', '/config', { token: admin, form: 'a' })).body.detection.max_persons).toBe(3);
    await s.api('PUT', '/config', { token: admin, body: { detection: { max_persons: 4 } } });
  });

  it('lets an operator (API key) stop and start the system, but not change the configuration', async () => {
    const { key } = await s.apiKey(admin, 'operator', 'dashboard-operator');
    const page = await open();
    await signIn(page, s.base, { apiKey: key });
    expect(await text(page, '#role')).toBe('operator');
    await page.click('#tab-system');
    await page.waitForFunction(() => document.querySelector('#system-state')?.textContent === 'running');
    await page.click('button[data-action=stop]');
    await page.waitForFunction(() => document.querySelector('#system-state')?.textContent === 'stopped');
    expect((await s.api('GET', '/system/status', { token: admin })).body.data.status).toBe('stopped');
    expect(await page.isDisabled('button[data-action=stop]')).toBe(true);
    await page.click('button[data-action=start]');
    await page.waitForFunction(() => document.querySelector('#system-state')?.textContent === 'running');
    expect((await s.api('GET', '/system/status', { token: admin })).body.data.status).toBe('running');
    // The configuration is read-only below admin.
    await page.waitForSelector('[name="detection.max_persons"]', { state: 'attached' });
    expect(await page.isDisabled('[name="detection.max_persons"]')).toBe(true);
    expect(await page.isHidden('#config-form button[type=submit]')).toBe(true);
    // And the live view comes back with the new session.
    await page.click('#tab-live');
    await nextFrameWithPeople(page);
  });

  it('disables the controls for a viewer, and shows the refusal when they are forced', async () => {
    const { key } = await s.apiKey(admin, 'viewer', 'dashboard-viewer');
    const page = await open();
    await signIn(page, s.base, { apiKey: key });
    expect(await text(page, '#role')).toBe('viewer');
    await page.click('#tab-system');
    await page.waitForFunction(() => document.querySelector('#system-state')?.textContent === 'running');
    for (const a of ['start', 'stop', 'restart']) expect(await page.isDisabled(`button[data-action=${a}]`), a).toBe(true);
    expect(await text(page, '.system .form-message.note')).toBe('Start, stop and restart need the operator role; you are viewer.');
    const session = (await s.api('GET', '/system/status', { token: admin })).body.data.session_id;
    // Enabled by hand, the button's request is refused by the server (403) and the page says why.
    await page.evaluate(() => {
      const b = document.querySelector<HTMLButtonElement>('button[data-action=restart]')!;
      b.disabled = false;
      b.click();
    });
    await page.waitForFunction(() => /needs the operator role and you are viewer/.test(document.querySelector('#system-message')?.textContent ?? ''));
    expect((await s.api('GET', '/system/status', { token: admin })).body.data).toMatchObject({ status: 'running', session_id: session });
    expect(await page.isDisabled('button[data-action=restart]')).toBe(true);
  });

  it('refreshes a token before it expires, and ends the session when it is revoked', async () => {
    const login = await s.api('POST', '/auth/token', { form: 'a', body: { username: 'admin', password: ADMIN_PASSWORD } });
    const now = Math.floor(Date.now() / 1000);
    // An access token 2 minutes from its end, as a tab that has been open for almost a day would
    // hold (inside the 5 minutes before expiry in which the page renews; long enough for a loaded
    // machine to open the page before it expires).
    const ending = await new SignJWT({ role: 'admin' })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject('admin')
      .setIssuedAt(now - 86_280)
      .setExpirationTime(now + 120)
      .setJti(randomBytes(8).toString('hex'))
      .sign(new TextEncoder().encode(JWT_SECRET));
    const state = {
      kind: 'token',
      user: 'admin',
      role: 'admin',
      access: ending,
      refresh: login.body.refresh_token,
      expiresAt: (now + 120) * 1000,
      lifetime: 86_400_000,
    };
    const page = await open();
    await page.addInitScript((st) => sessionStorage.setItem('csipose.session', st), JSON.stringify(state));
    await page.goto(`${s.base}/`);
    await page.waitForSelector('#role');
    await page.waitForFunction((old) => JSON.parse(sessionStorage.getItem('csipose.session') ?? '{}').access !== old, ending);
    const renewed = JSON.parse((await page.evaluate(() => sessionStorage.getItem('csipose.session')))!);
    expect(renewed.expiresAt).toBeGreaterThan(Date.now() + 86_000_000);
    expect((await s.api('GET', '/system/status', { token: renewed.access })).status).toBe(200);
    // The old refresh token was used up by the page.
    expect((await s.api('POST', '/auth/refresh', { body: { refresh_token: login.body.refresh_token } })).status).toBe(401);
    await nextFrameWithPeople(page);

    // Revoked elsewhere: the stream is closed (4401), renewing fails, and the page asks to sign in again.
    expect((await s.api('POST', '/auth/revoke', { body: { token: renewed.refresh } })).status).toBe(200);
    await page.waitForSelector('#signin');
    expect(await text(page, '#signin-error')).toMatch(/session has ended/);
  });

  it('shows occupancy, activity and events for a chosen period as charts', async () => {
    const page = await open();
    await signIn(page, s.base, { username: 'admin', password: ADMIN_PASSWORD });
    await page.click('#tab-analytics');
    await page.selectOption('#analytics-period', 'hour');
    await page.selectOption('#events-type', 'all');
    await page.waitForSelector('#occupancy-chart canvas');
    await page.waitForSelector('#activity-chart canvas');
    // Events reach the store in batches: ask again until some are there.
    await until(
      async () => {
        if ((await page.locator('#events tbody tr').count()) > 0) return true;
        await page.click('.analytics .toolbar button');
        await page.waitForFunction(() => document.querySelector('.analytics .toolbar .form-message')?.textContent?.startsWith('Updated'));
        return undefined;
      },
      'stored events in the analytics panel',
      40,
      500,
    );
    expect(await text(page, '#events p')).toMatch(/^\d+ events in the period/);
    expect(Number(await text(page, '.cards .card:last-child .value'))).toBeGreaterThan(0);
  });

  it('draws only the newest analytics refresh: an answer that comes late for an earlier choice never replaces it', async () => {
    const page = await open();
    await signIn(page, s.base, { username: 'admin', password: ADMIN_PASSWORD });
    // Hold the answers for the default filter (falls and alerts: requests with event_type) until
    // the newer choice, all events, has drawn; then let them come.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let holding = 0;
    let finished = 0;
    const late = /\/api\/v1\/analytics\/events\?.*event_type=/;
    await page.route(late, async (route) => {
      holding++;
      await held;
      await route.continue();
    });
    page.on('requestfinished', (r) => {
      if (late.test(r.url())) finished++;
    });
    await page.click('#tab-analytics');
    await until(async () => (holding >= 2 ? true : undefined), 'the falls-and-alerts requests held', 40, 100);
    await page.selectOption('#events-type', 'all');
    await page.waitForFunction(() => /^\d+ events in the period/.test(document.querySelector('#events p')?.textContent ?? ''));
    release();
    await until(async () => (finished >= holding ? true : undefined), 'the held requests answered', 40, 100);
    // Let the page take the late answers in (they arrive as ordinary tasks).
    await page.evaluate(() => new Promise((r) => setTimeout(r, 200)));
    expect(await text(page, '#events p')).toMatch(/^\d+ events in the period/);
    expect(await page.inputValue('#events-type')).toBe('all');
  });

  it('opens each tab on a 1440 x 900 screen and a 390 x 844 phone: the live view fills the screen, figures carry units, analytics fit the data, events filter by type', async () => {
    for (const viewport of [
      { width: 1440, height: 900 },
      { width: 390, height: 844 },
    ]) {
      const at = `${viewport.width}x${viewport.height}`;
      const page = await open(viewport);
      await signIn(page, s.base, { username: 'admin', password: ADMIN_PASSWORD });
      await nextFrameWithPeople(page);
      const layout = () =>
        page.evaluate(() => {
          const live = document.querySelector('#panel-live')!.getBoundingClientRect();
          const view = document.querySelector('#view')!.getBoundingClientRect();
          const e = document.documentElement;
          return {
            liveBottom: live.bottom,
            viewHeight: view.height,
            viewWidth: view.width,
            scrollHeight: e.scrollHeight,
            scrollWidth: e.scrollWidth,
            w: innerWidth,
            h: innerHeight,
          };
        });
      const live = await layout();
      // Nothing sticks out sideways, on either screen.
      expect(live.scrollWidth, `${at} live: page width`).toBeLessThanOrEqual(live.w);
      if (viewport.width >= 1000) {
        // The live tab reaches the bottom of the window without scrolling, and the reference view
        // takes most of its height (it took 60 % of the width and left the bottom 40 % empty).
        expect(live.liveBottom, `${at}: live tab bottom`).toBeGreaterThan(0.95 * live.h);
        expect(live.scrollHeight, `${at}: page height`).toBeLessThanOrEqual(live.h);
        expect(live.viewHeight, `${at}: view height`).toBeGreaterThan(0.7 * live.h);
      } else {
        expect(live.viewWidth, `${at}: view width`).toBeGreaterThan(0.85 * live.w);
      }

      await page.click('#tab-system');
      await page.waitForSelector('tr[data-figure=cpu_usage]');
      expect(await text(page, 'tr[data-figure=cpu_usage] td')).toMatch(/^\d+(\.\d)? % of the machine$/);
      expect(await text(page, 'tr[data-figure=memory_usage] td')).toMatch(/^\d+(\.\d)? % of the machine$/);
      expect(await text(page, 'tr[data-figure=average_latency_ms] td')).toMatch(/^\d+(\.\d)? ms$/);
      expect((await layout()).scrollWidth, `${at} system: page width`).toBeLessThanOrEqual(viewport.width);

      await page.click('#tab-analytics');
      await page.waitForFunction(() => document.querySelector('.analytics .toolbar .form-message')?.textContent?.startsWith('Updated'));
      // The service has stored a few minutes: the period that holds them is the last hour, not 24 hours.
      expect(await page.inputValue('#analytics-period'), `${at}: period`).toBe('hour');
      expect(await text(page, '.analytics .toolbar .form-message')).toMatch(/data stored since/);
      // Falls and alerts first: activity changes only when asked for.
      expect(await page.inputValue('#events-type')).toBe('important');
      expect(await text(page, '#events p')).toMatch(/^\d+ alerts and \d+ fall events/);
      expect(await page.locator('#events tr[data-type=activity_change]').count()).toBe(0);
      await page.selectOption('#events-type', 'activity');
      await until(
        async () => {
          if ((await page.locator('#events tr[data-type=activity_change]').count()) > 0) return true;
          await page.click('.analytics .toolbar button');
          await page.waitForFunction(() => document.querySelector('.analytics .toolbar .form-message')?.textContent?.startsWith('Updated'));
          return undefined;
        },
        'activity changes in the events list',
        40,
        500,
      );
      expect(await page.locator('#events tbody tr:not([data-type=activity_change])').count()).toBe(0);
      expect((await layout()).scrollWidth, `${at} analytics: page width`).toBeLessThanOrEqual(viewport.width);
    }
  });

  it("draws the site's radios and each link in the state /system/status gives it, and lists the links with their figures", async () => {
    const page = await open({ width: 1440, height: 900 });
    // Every status answer the page reads, by its time: whatever the page shows came from one of them.
    /** A link of a Form B status answer: the figures the page shows. */
    interface StatusLink {
      link_id: string;
      state: string;
      primary: boolean;
      rate_hz: number;
      packet_loss_rate: number;
      last_packet_time: string | null;
      lag_ms: number;
      layout: string | null;
      reason: string | null;
    }
    /** A Form B `/system/status` data object: the parts read here. */
    interface StatusAnswer {
      status: string;
      components?: { csi_processor?: { links?: StatusLink[] } };
    }
    const answers = new Map<string, StatusAnswer>();
    page.on('response', (r) => {
      if (new URL(r.url()).pathname !== '/api/v1/system/status' || !r.ok()) return;
      r.json().then(
        (b) => b?.timestamp && answers.set(b.timestamp, b.data),
        () => undefined,
      );
    });
    const site = (await s.api('GET', '/config', { token: admin, form: 'a' })).body.environment.site;
    const tx = site.radios.find((r: { role: string }) => r.role === 'tx');
    const siteLinks: string[] = site.radios.filter((r: { role: string }) => r.role === 'rx').map((r: { id: string }) => `${tx.id}-${r.id}`);
    expect(siteLinks.length, 'the default site has several receivers').toBeGreaterThan(1);
    await signIn(page, s.base, { username: 'admin', password: ADMIN_PASSWORD });
    await nextFrameWithPeople(page);

    // The radios, as configured: named with their role on the canvas, and in words under it.
    await page.waitForFunction(() => !!document.querySelector<HTMLCanvasElement>('#floor')?.dataset.radios);
    expect(await page.getAttribute('#floor', 'data-radios')).toBe(site.radios.map((r: { id: string; role: string }) => `${r.id}:${r.role}`).join(' '));
    const radioItems = await page.$$eval('#floor-radios li', (lis) =>
      lis.map((li) => [(li as HTMLElement).dataset.radio, (li as HTMLElement).dataset.role, li.textContent]),
    );
    expect(radioItems.map(([id, role]) => [id, role])).toEqual(site.radios.map((r: { id: string; role: string }) => [r.id, r.role]));
    site.radios.forEach((r: { yaw_deg: number; x: number; y: number }, i: number) =>
      expect(radioItems[i]![2]).toContain(`at ${r.x} m, ${r.y} m, facing ${Math.round(r.yaw_deg)}\u00b0`),
    );

    /** The status answer the floor plan shows, with the legend and the drawn links, read together. */
    const planShows = () =>
      until(async () => {
        const shown = await page.evaluate(() => {
          const legend = document.querySelector<HTMLElement>('#floor-links')!;
          return {
            at: legend.dataset.at ?? '',
            drawnAt: document.querySelector<HTMLCanvasElement>('#floor')!.dataset.linksAt ?? '',
            drawn: (document.querySelector<HTMLCanvasElement>('#floor')!.dataset.links ?? '').split(' '),
            listed: Array.from(legend.querySelectorAll<HTMLElement>('li')).map((li) => [li.dataset.link, li.dataset.state, li.dataset.primary]),
          };
        });
        const answer = answers.get(shown.at);
        return shown.at && shown.drawnAt === shown.at && answer ? { ...shown, answer } : undefined;
      }, 'the floor plan showing a status answer the page read');
    /** What the plan should show for an answer: every reported link listed, every site link drawn in its reported state. */
    const expectPlanToShow = (shown: Awaited<ReturnType<typeof planShows>>) => {
      const links: StatusLink[] | undefined = shown.answer.components?.csi_processor?.links;
      expect(shown.listed).toEqual((links ?? []).map((l) => [l.link_id, l.state, String(l.primary)]));
      expect(shown.drawn).toEqual(
        siteLinks.map((id) => {
          const l = links?.find((k) => k.link_id === id);
          return l ? `${id}:${l.state}${l.primary ? ':primary' : ''}` : `${id}:unreported`;
        }),
      );
      return links;
    };
    const running = await planShows();
    expect(running.answer.status).toBe('running');
    const links = expectPlanToShow(running);
    if (links) {
      // The running site's links, its primary first: the one the model reads.
      expect(links.filter((l) => siteLinks.includes(l.link_id)).map((l) => l.link_id)).toEqual(siteLinks);
      expect(links[0]!.primary).toBe(true);
      expect(await text(page, '#link-count')).toBe(`\u00b7 ${links.filter((l) => l.state === 'live').length} of ${links.length} links live`);
    }

    // Stopped, the service reports no links: the plan draws none in a state, and lists none.
    const source = (await s.api('GET', '/config', { token: admin, form: 'a' })).body.hardware.source;
    expect((await s.api('POST', '/system/stop', { token: admin })).status).toBe(202);
    try {
      await waitForStatus(s, admin, 'stopped');
      const stopped = await until(async () => {
        const shown = await planShows();
        return shown.answer.status === 'stopped' ? shown : undefined;
      }, 'the floor plan showing the stopped system');
      expectPlanToShow(stopped);
      expect(stopped.drawn).toEqual(siteLinks.map((id) => `${id}:unreported`));

      // A site whose last receiver never sends (the simulator simulating all but it): that link
      // is reported waiting while the others are live, and the plan and the table say the same.
      expect((await s.api('PUT', '/config', { token: admin, form: 'a', body: { hardware: { source: `sim?links=${siteLinks.length - 1}` } } })).status).toBe(
        200,
      );
      expect((await s.api('POST', '/system/start', { token: admin })).status).toBe(202);
      await waitForStatus(s, admin, 'running');
      const silent = siteLinks[siteLinks.length - 1]!;
      const partial = await until(async () => {
        const shown = await planShows();
        const links: StatusLink[] = shown.answer.components?.csi_processor?.links ?? [];
        return links.some((l) => l.link_id === silent && l.state === 'waiting') && links.some((l) => l.state === 'live') ? shown : undefined;
      }, `the floor plan showing ${silent} waiting beside live links`);
      expectPlanToShow(partial);
      expect(partial.drawn).toContain(`${silent}:waiting`);
      expect(partial.listed).toContainEqual([silent, 'waiting', 'false']);

      // The System tab: one row per link with its figures, in the units its header gives, and why a link is not live.
      await page.click('#tab-system');
      const table = await until(async () => {
        const shown = await page.evaluate(() => ({
          at: document.querySelector<HTMLElement>('.status-details')?.dataset.at ?? '',
          head: Array.from(document.querySelectorAll('#links-table thead th')).map((th) => th.textContent),
          rows: Array.from(document.querySelectorAll<HTMLElement>('#links-table tr[data-link]')).map((tr) =>
            Object.fromEntries(Array.from(tr.querySelectorAll<HTMLElement>('[data-col]')).map((c) => [c.dataset.col, c.textContent])),
          ),
          reasons: Object.fromEntries(
            Array.from(document.querySelectorAll<HTMLElement>('#links-table tr[data-reason-of]')).map((tr) => [tr.dataset.reasonOf, tr.textContent]),
          ),
        }));
        const answer = answers.get(shown.at);
        const links: StatusLink[] | undefined = answer?.components?.csi_processor?.links;
        return links?.some((l) => l.link_id === silent && l.state === 'waiting') ? { ...shown, links } : undefined;
      }, 'the links table showing a status answer the page read');
      expect(table.head).toEqual(['link', 'state', 'rate (Hz)', 'loss (%)', 'last packet', 'lag (ms)', 'layout', 'primary']);
      const one = (v: number) => String(Math.round(v * 10) / 10);
      const at = Date.parse(table.at);
      expect(table.rows).toEqual(
        table.links.map((l) => ({
          link: l.link_id,
          state: l.state,
          rate: one(l.rate_hz),
          loss: one(l.packet_loss_rate * 100),
          last: l.last_packet_time === null ? 'never' : `${((at - Date.parse(l.last_packet_time)) / 1000).toFixed(1)} s ago`,
          lag: one(l.lag_ms),
          layout: l.layout ?? '-',
          primary: l.primary ? '\u2605' : '',
        })),
      );
      expect(table.rows.find((r) => r.link === silent)).toMatchObject({ state: 'waiting', rate: '0', last: 'never' });
      expect(table.rows.find((r) => r.link === siteLinks[0])).toMatchObject({ state: 'live', primary: '\u2605' });
      for (const l of table.links) expect(table.reasons[l.link_id] ?? '').toBe(l.reason ?? '');
      expect(table.reasons[silent]).toMatch(new RegExp(`^${silent}`));
    } finally {
      await s.api('POST', '/system/stop', { token: admin });
      await waitForStatus(s, admin, 'stopped');
      expect((await s.api('PUT', '/config', { token: admin, form: 'a', body: { hardware: { source } } })).status).toBe(200);
      expect((await s.api('POST', '/system/start', { token: admin })).status).toBe(202);
      await waitForStatus(s, admin, 'running');
    }
    await page.click('#tab-live');
    await nextFrameWithPeople(page);
  });

  it('draws nobody in the view, and says so, while everyone is out of it (no box), and keeps them on the floor plan', async () => {
    const page = await open({ width: 1440, height: 900 });
    await signIn(page, s.base, { username: 'admin', password: ADMIN_PASSWORD });
    await nextFrameWithPeople(page);
    // The view turned to look out of the room: every person is behind the camera.
    expect((await s.api('PUT', '/config', { token: admin, body: { environment: { view: { yaw_deg: 180 } } } })).status).toBe(200);
    try {
      await page.waitForFunction(() =>
        /^· 0 of \d+ in view \(the others are on the floor plan\)$/.test(document.querySelector('#view-count')?.textContent ?? ''),
      );
      expect(await page.getAttribute('#view', 'data-persons')).toBe('0');
    } finally {
      expect((await s.api('PUT', '/config', { token: admin, body: { environment: { view: { yaw_deg: 0 } } } })).status).toBe(200);
    }
    await nextFrameWithPeople(page);
  });
});

describe.skipIf(!CHROMIUM)('sign-in messages', () => {
  let s: TestServer;
  let browser: Browser;
  beforeAll(async () => {
    // Two sign-in attempts a minute, so that the third is refused.
    [s, browser] = await Promise.all([startServer({ config: { rate_limits: { authentication: { points: 2, duration_seconds: 60 } } } }), launchBrowser()]);
  });
  afterAll(async () => {
    await browser?.close();
    await s?.close();
  });

  it('says what went wrong on 401 and 429, and for an API key that is not valid', async () => {
    const page = await browser.newPage();
    await page.goto(`${s.base}/`);
    const attempt = async () => {
      await page.fill('#username', 'admin');
      await page.fill('#password', 'wrong');
      await page.click('#sign-in');
      await page.waitForFunction(
        () => !!document.querySelector('#signin-error')?.textContent && !(document.querySelector('#sign-in') as HTMLButtonElement).disabled,
      );
      const t = (await page.textContent('#signin-error'))!;
      await page.evaluate(() => (document.querySelector('#signin-error')!.textContent = ''));
      return t;
    };
    expect(await attempt()).toBe('Wrong username or password.');
    expect(await attempt()).toBe('Wrong username or password.');
    expect(await attempt()).toMatch(/^Sign-in: too many requests \(2 requests per 60 s\)\. Try again in \d+ s \(at .+\)\.$/);

    await page.click('button[data-mode=key]');
    await page.fill('#apikey', 'csk_nope_notakey000000000000');
    await page.click('#sign-in');
    await page.waitForFunction(() => !!document.querySelector('#signin-error')?.textContent);
    expect(await page.textContent('#signin-error')).toBe('This API key is not valid (mistyped or revoked).');
    expect(page.url()).toBe(`${s.base}/`);
    await page.close();
  });
});
