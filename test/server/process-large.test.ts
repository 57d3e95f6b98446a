/**
 * Large `POST /pose/process` submissions (issue 17, item 22): bodies from 256 KiB on are parsed,
 * checked and packed in a worker thread and fed to the pipeline a slice per turn of the event
 * loop. What a client sees must not change with the path its body takes: the same poses, the
 * same errors. Timings are the benchmark's business; here the server only has to keep answering.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OFF_THREAD_MIN_BYTES } from '../../src/server/submission.js';
import { startServer, waitForStatus, type TestServer } from '../helpers/server.js';

interface Sample {
  real: number;
  imag: number;
}

/** One packet of `nRx` antennas x `nSub` subcarriers, varying smoothly with `t`. */
function packet(t: number, nRx = 3, nSub = 30): Sample[][] {
  return Array.from({ length: nRx }, (_, rx) =>
    Array.from({ length: nSub }, (_, sc) => {
      const amp = 1 + 0.3 * Math.cos(sc / 5 + rx);
      const ph = 0.15 * sc + 0.7 * rx + 0.4 * Math.sin(t / 6 + rx);
      // Three decimals keep a packet near 2.7 KB, so 4 MiB holds about 1500 of them.
      return { real: Math.round(amp * Math.cos(ph) * 1000) / 1000, imag: Math.round(amp * Math.sin(ph) * 1000) / 1000 };
    }),
  );
}

/** A submission of `n` packets. */
function submission(n: number): { csi_data: { timestamp: string; frames: Array<{ antenna_data: Sample[][] }> }; processing_options: Record<string, unknown> } {
  return {
    csi_data: { timestamp: '2026-01-05T10:00:00.000Z', frames: Array.from({ length: n }, (_, i) => ({ antenna_data: packet(i) })) },
    processing_options: { confidence_threshold: 0, enable_tracking: true },
  };
}

/** The same JSON made larger than the worker's threshold with white space, which JSON ignores. */
function padded(json: string): string {
  return `${json}${' '.repeat(OFF_THREAD_MIN_BYTES + 1024)}`;
}

/** The poses of an answer without what differs per request (the time each took). */
function poses(r: { body: { data: { poses: Array<Record<string, unknown>> } } }): unknown[] {
  return r.body.data.poses.map(({ processing_time_ms: _t, ...rest }: Record<string, unknown>) => rest);
}

describe('large POST /pose/process submissions', () => {
  let s: TestServer;
  let token: string;
  beforeAll(async () => {
    s = await startServer({ model: true, rateLimitScale: 50, source: 'udp://127.0.0.1:0?format=esp32' });
    token = await s.login();
    expect((await s.api('POST', '/system/start', { token })).status).toBe(202);
    await waitForStatus(s, token, 'running');
  });
  afterAll(() => s?.close());

  it('gives the same poses whether the body is parsed on the event loop or by the worker', async () => {
    const json = JSON.stringify(submission(80));
    expect(json.length).toBeLessThan(OFF_THREAD_MIN_BYTES);
    const small = await s.api('POST', '/pose/process', { token, rawBody: json });
    expect(small.status, small.text.slice(0, 300)).toBe(200);
    const large = await s.api('POST', '/pose/process', { token, rawBody: padded(json) });
    expect(large.status, large.text.slice(0, 300)).toBe(200);
    expect(large.body.data.frames_received).toBe(80);
    expect(poses(large).length).toBeGreaterThan(0);
    expect(poses(large)).toEqual(poses(small));
  });

  it('gives the same 422 for a bad sample deep inside, and the same 400 for a body that is not JSON', async () => {
    const body = submission(120);
    (body.csi_data.frames[77]!.antenna_data[2]![13] as unknown) = { real: 1, imag: 'x' };
    (body.csi_data.frames[90]!.antenna_data as unknown) = [
      [{ real: 1, imag: 0 }],
      [
        { real: 1, imag: 0 },
        { real: 2, imag: 0 },
      ],
    ];
    const json = JSON.stringify(body);
    const small = await s.api('POST', '/pose/process', { token, rawBody: json, form: 'a' });
    const large = await s.api('POST', '/pose/process', { token, rawBody: padded(json), form: 'a' });
    expect(small.status).toBe(422);
    expect(large.status).toBe(422);
    expect(large.body.error.details.field_errors).toEqual(small.body.error.details.field_errors);
    expect(large.body.error.details.field_errors.map((e: { field: string }) => e.field)).toEqual([
      'csi_data.frames[77].antenna_data[2][13]',
      'csi_data.frames[90].antenna_data[1]',
    ]);

    const broken = padded(json).slice(0, -10) + '}}}';
    const bad = await s.api('POST', '/pose/process', { token, rawBody: broken });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/^body is not valid JSON: /);
    const deep = `${'['.repeat(70)}${']'.repeat(70)}${' '.repeat(OFF_THREAD_MIN_BYTES)}`;
    const tooDeep = await s.api('POST', '/pose/process', { token, rawBody: deep });
    expect(tooDeep.status).toBe(400);
    expect(tooDeep.body.error.details.max_depth).toBe(64);
  });

  it('keeps answering other requests while a 4 MiB submission is in progress', async () => {
    const n = 1500;
    const json = JSON.stringify(submission(n));
    expect(json.length).toBeGreaterThan(3.5 * 1024 * 1024);
    expect(json.length).toBeLessThanOrEqual(4 * 1024 * 1024);
    let done = false;
    const big = s.api('POST', '/pose/process', { token, rawBody: json }).finally(() => (done = true));
    let answered = 0;
    while (!done) {
      const h = await s.api('GET', '/health');
      expect(h.status).toBe(200);
      answered++;
    }
    const r = await big;
    expect(r.status, r.text.slice(0, 300)).toBe(200);
    expect(r.body.data.frames_received).toBe(n);
    expect(answered).toBeGreaterThan(0);
  });
});
