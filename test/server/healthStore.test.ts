/**
 * The running service on a data disk that fills up: the real application (live pipeline with the
 * simulator, DuckDB sink, REST) with its data directory on a small tmpfs, filled to the last byte
 * while it stores, then given room again. Mounting needs root (CAP_SYS_ADMIN), as CI has;
 * without it the test is skipped, saying why.
 *
 * - `/health/detailed` reports the storage failure at once (database `degraded` with the last
 *   error, overall `degraded`) and keeps reporting it while the sink's rows wait, even when
 *   another write succeeds meanwhile (before: any successful write made it `healthy` again).
 * - Once there is room, the rows held are written (none dropped) and health is `healthy` again.
 * - The errors the service logged meanwhile are counted: the summary's `error_count` of the
 *   period equals them once the next metrics sample is stored.
 */
import { unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { smallDisk } from '../helpers/fullDisk.js';
import { startServer, until, waitForStatus } from '../helpers/server.js';

const { dir: mnt, mounted, fill } = smallDisk('8m', 'test/server/healthStore.test.ts', { lazy: true, prefix: 'csipose-fullsvc-' });

describe.skipIf(!mounted)('health and metrics on a data disk that fills up', () => {
  it('reports the failure at once and until the held rows are written; counts the errors logged', async () => {
    const started = new Date(Date.now() - 1000).toISOString();
    const s = await startServer({ dataDir: join(mnt, 'data'), model: true, autostart: true, rateLimitScale: 100 });
    try {
      const token = await s.login();
      await waitForStatus(s, token, 'running');
      const sink = s.app.store.sink;
      await until(async () => (sink.stats.frames > 10 ? true : undefined), 'stored frames');
      const health = async () => (await s.api('GET', '/health/detailed', { token, form: 'a' })).body;
      expect((await health()).components.database.status).toBe('healthy');

      const filler = fill();
      /** `/health/detailed` in Form A, the parts read here. */
      let h: { overall_status: string; components: Record<string, { status: string; last_error?: string }> };
      try {
        // The sink's next batch (every 250 ms) fails: reported on the next request.
        h = await until(async () => {
          const b = await health();
          return b.components.database.status !== 'healthy' ? b : undefined;
        }, 'the storage failure in /health/detailed');
        expect(h.components.database).toMatchObject({ status: 'degraded', last_error: expect.stringMatching(/No space left on device/) });
        expect(h.overall_status).toBe('degraded');
        expect(sink.stats.pending).toBeGreaterThan(0);
        // A write of another kind succeeds (it needs no room); the sink's rows still wait.
        await s.svc.store.execute('DELETE FROM alerts WHERE ts < ?', [new Date(0)]);
        h = await health();
        expect(h.components.database).toMatchObject({ status: 'degraded', last_error: expect.stringMatching(/No space left on device/) });
        expect(h.overall_status).toBe('degraded');
        expect(s.svc.log.errors).toBeGreaterThan(0);
      } finally {
        unlinkSync(filler);
      }
      // Room again: the held rows go in with the next retry, and nothing was dropped.
      h = await until(async () => {
        const b = await health();
        return b.components.database.status === 'healthy' && sink.stats.pending < 200 ? b : undefined;
      }, 'healthy storage again');
      expect(h.components.database.last_error).toBeUndefined();
      expect(sink.stats.dropped).toBe(0);

      // The errors logged during the outage reach the summary with the next metrics sample (every 10 s).
      const logged = s.svc.log.errors;
      const summary = await until(
        async () => {
          const r = await s.api('GET', '/analytics/summary', { token, query: { start_time: started, end_time: new Date(Date.now() + 60_000).toISOString() } });
          const n = r.body?.data?.system_stats?.error_count;
          return typeof n === 'number' && n >= logged ? r.body.data : undefined;
        },
        'the errors in the summary',
        300,
        100,
      );
      expect(summary.system_stats.error_count).toBe(s.svc.log.errors);
    } finally {
      await s.close();
    }
  });
});
