/**
 * `npm run bench:store [-- --json] [-- --quick]`: the store as analysts and clients meet it.
 *
 * 1. `store.ingest` (rows/s): the ingest suite of `npm run bench` (bench/store.ts).
 * 2. A day of live data (12.5 pose frames/s for 24 h, two tracked persons each: 1.08 M frames,
 *    2.16 M persons) written through the real PoseSink into a DuckDB file, then the real service
 *    opened on it (`startApp`, system not started) and read over HTTP as a client does:
 *    `history.page_p99` (ms, Form B pages of 100 person records of one filter spread over the day),
 *    `history.page_first_p99` (the first page of filters not read before),
 *    `history.cursor_p99` (Form A cursor pages of 100 frames), and `analytics.summary_day_ms`
 *    (`GET /analytics/summary` over the whole day, median of rounds).
 * `--quick` stores an hour instead of a day.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Activity, PersonPose, PoseFrame } from '../src/pose/types.js';
import { Rng } from '../src/sim/rng.js';
import { PoseSink } from '../src/store/poseSink.js';
import { Store } from '../src/store/store.js';
import { startApp } from '../src/app.js';
import { printResults, quantile, type BenchResult } from './lib.js';
import { run as ingest } from './store.js';

const FRAME_MS = 80;
const DAY0 = Date.parse('2026-11-20T00:00:00.000Z');
const ACTS: readonly Activity[] = ['walking', 'standing', 'sitting', 'lying'];
const PASSWORD = 'bench-store-password-1';

/** One frame of the synthetic day: two tracked persons moving slowly, new track ids every 10 minutes. */
function frame(k: number, rng: Rng): PoseFrame {
  const persons: PersonPose[] = [];
  const t = DAY0 + k * FRAME_MS;
  for (let i = 0; i < 2; i++) {
    const keypoints = new Float32Array(51);
    const cx = 200 + 150 * i + 40 * Math.sin(k / 500 + i);
    for (let j = 0; j < 17; j++) keypoints.set([cx + rng.gaussian(0, 20), 250 + rng.gaussian(0, 60), rng.uniform(0.4, 1)], 3 * j);
    persons.push({
      slot: i,
      confidence: rng.uniform(0.6, 1),
      keypoints,
      bbox: Float32Array.of(cx - 40, 150, 80, 200),
      floor: { x: 2 + 2 * i + Math.sin(k / 500), y: 2 + Math.cos(k / 700) },
      trackId: 2 * Math.floor(k / 7500) + i + 1,
      trackAge: k % 7500,
      activity: ACTS[Math.floor(k / 3000 + i) % ACTS.length]!,
      activityConfidence: 0.9,
    });
  }
  return { frameId: k, time: t, sourceId: 'bench', environmentId: 'default', persons, processingMs: rng.uniform(3, 8), modelVersion: 'bench', csiQuality: 0.9 };
}

/** Writes `n` frames through the sink, yielding to the loop as the live pipeline would. */
async function fill(path: string, n: number): Promise<number> {
  const store = await Store.open(path);
  const rng = new Rng(5);
  const t0 = performance.now();
  try {
    let lastError = '';
    const sink = new PoseSink(store, { onError: (e) => (lastError = e.message) });
    for (let k = 0; k < n; k++) {
      sink.write(frame(k, rng));
      if (k % 200 === 199) {
        await new Promise((r) => setImmediate(r));
        // Faster than live: wait for the store instead of filling the sink's bounded buffer.
        if (sink.stats.pending > 50_000) await sink.flush();
      }
    }
    await sink.close();
    if (sink.stats.dropped > 0) throw new Error(`the sink dropped ${sink.stats.dropped} rows: ${lastError}`);
  } finally {
    await store.close();
  }
  return performance.now() - t0;
}

/** Times `requests` GETs; returns the latencies, sorted. */
async function timed(urls: readonly string[], headers: Record<string, string>): Promise<number[]> {
  const out: number[] = [];
  for (const url of urls) {
    const t0 = performance.now();
    const r = await fetch(url, { headers });
    const body = await r.text();
    out.push(performance.now() - t0);
    if (r.status !== 200) throw new Error(`${url}: ${r.status} ${body.slice(0, 200)}`);
  }
  return out.sort((a, b) => a - b);
}

async function main(): Promise<void> {
  const json = process.argv.includes('--json');
  const quick = process.argv.includes('--quick');
  const results: BenchResult[] = [...(await ingest())];
  const frames = quick ? 45_000 : 1_080_000;
  const hours = (frames * FRAME_MS) / 3_600_000;
  const dir = mkdtempSync(join(tmpdir(), 'csipose-bench-day-'));
  try {
    process.stderr.write(`storing ${frames.toLocaleString('en-US')} frames (${hours} h at 12.5 frames/s, 2 persons each)...\n`);
    const fillMs = await fill(join(dir, 'data', 'csipose.duckdb'), frames);
    results.push({
      name: 'store.day.fill',
      value: (frames * 3) / (fillMs / 1000),
      unit: 'rows/s',
      n: frames * 3,
      note: `${hours} h of frames (1 frame + 2 person rows each) through the PoseSink into one file, ${(fillMs / 1000).toFixed(1)} s`,
    });
    const app = await startApp({
      host: '127.0.0.1',
      port: 0,
      dataDir: join(dir, 'data'),
      autostart: false,
      rateLimitScale: 1e6,
      env: { CSIPOSE_ADMIN_PASSWORD: PASSWORD },
      log: () => undefined,
    });
    try {
      const base = `http://127.0.0.1:${app.server.port}/api/v1`;
      const login = await fetch(`${base}/auth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: 'admin', password: PASSWORD }),
      });
      const token = ((await login.json()) as { data: { access_token: string } }).data.access_token;
      const auth = { authorization: `Bearer ${token}` };
      const start = new Date(DAY0).toISOString();
      const end = new Date(DAY0 + frames * FRAME_MS).toISOString();
      const pages = Math.floor((frames * 2) / 100);
      // 200 pages spread evenly over the day (the deepest offsets included), then again (warm).
      const urls = Array.from(
        { length: 200 },
        (_, i) => `${base}/pose/history?start_time=${start}&end_time=${end}&per_page=100&page=${1 + Math.floor((i * (pages - 1)) / 199)}`,
      );
      await timed(urls.slice(0, 20), auth);
      // After 20 pages of the day's filter (the first made its index: the filter's columns read
      // once, warm), the first page of each of 20 filters never read before (start times a
      // second apart), in the middle of the day: each makes its filter's page index (one pass
      // over its rows).
      const first = await timed(
        Array.from(
          { length: 20 },
          (_, i) =>
            `${base}/pose/history?start_time=${new Date(DAY0 + (i + 1) * 1000).toISOString()}&end_time=${end}&per_page=100&page=${Math.floor(pages / 2) + i}`,
        ),
        auth,
      );
      const page = await timed(urls, auth);
      results.push({
        name: 'history.page_p99',
        value: quantile(page, 0.99),
        unit: 'ms',
        n: page.length,
        note: `GET /pose/history Form B, 100 person records per page, 200 pages of one filter spread over ${hours} h (${(frames * 2).toLocaleString('en-US')} records), after 20 pages of it; p50 ${quantile(page, 0.5).toFixed(1)} ms, max ${page.at(-1)!.toFixed(1)} ms`,
      });
      results.push({
        name: 'history.page_first_p99',
        value: quantile(first, 0.99),
        unit: 'ms',
        n: first.length,
        note: `the first page of each of 20 filters not read before (a pass over the day's rows each), mid-day; p50 ${quantile(first, 0.5).toFixed(1)} ms`,
      });
      const cursorMs: number[] = [];
      let cursor = '';
      for (let i = 0; i < 100; i++) {
        const t0 = performance.now();
        const r = await fetch(`${base}/pose/history?limit=100${cursor ? `&cursor=${cursor}` : ''}`, { headers: { ...auth, 'x-response-form': 'a' } });
        const body = (await r.json()) as { pagination: { next_cursor: string | null } };
        cursorMs.push(performance.now() - t0);
        cursor = body.pagination.next_cursor ?? '';
      }
      cursorMs.sort((a, b) => a - b);
      results.push({
        name: 'history.cursor_p99',
        value: quantile(cursorMs, 0.99),
        unit: 'ms',
        n: cursorMs.length,
        note: `GET /pose/history Form A, 100 frames per page by cursor from the start of the day; p50 ${quantile(cursorMs, 0.5).toFixed(1)} ms`,
      });
      const summaryUrl = `${base}/analytics/summary?start_time=${start}&end_time=${end}&granularity=hour`;
      const probe = await fetch(summaryUrl, { headers: auth });
      await probe.text();
      if (probe.status === 200) {
        const summary = await timed(
          Array.from({ length: 5 }, () => summaryUrl),
          auth,
        );
        results.push({
          name: 'analytics.summary_day_ms',
          value: quantile(summary, 0.5),
          unit: 'ms',
          n: summary.length,
          note: `GET /analytics/summary over ${hours} h, hourly breakdown; median of 5 (min ${summary[0]!.toFixed(0)}, max ${summary.at(-1)!.toFixed(0)} ms)`,
        });
      } else process.stderr.write(`GET /analytics/summary answered ${probe.status}: analytics.summary_day_ms not measured\n`);
    } finally {
      await app.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  printResults(results, json);
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    process.stderr.write(`bench:store failed: ${(e as Error)?.stack ?? String(e)}\n`);
    process.exit(1);
  },
);
