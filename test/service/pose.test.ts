import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HOP, WINDOW_FRAMES } from '../../src/model/features.js';
import { startServer, until, waitForStatus, type TestServer } from '../helpers/server.js';
import type { WireFrame, WireKeypoint, WirePerson } from '../helpers/wire.js';

/** DECISIONS "Data": COCO-17, in this order. */
const COCO = [
  'nose',
  'left_eye',
  'right_eye',
  'left_ear',
  'right_ear',
  'left_shoulder',
  'right_shoulder',
  'left_elbow',
  'right_elbow',
  'left_wrist',
  'right_wrist',
  'left_hip',
  'right_hip',
  'left_knee',
  'right_knee',
  'left_ankle',
  'right_ankle',
];
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const PNG_B64 = /^iVBORw0KGgo/;

type Sample = { real: number; imag: number };

/** One packet of nRx antennas x nSub subcarriers: a smooth channel whose phase turns with `t`. */
function packet(t: number, nRx = 3, nSub = 30): Sample[][] {
  return Array.from({ length: nRx }, (_, rx) =>
    Array.from({ length: nSub }, (_, sc) => {
      const amp = 1 + 0.3 * Math.cos(sc / 5 + rx);
      const ph = 0.15 * sc + 0.7 * rx + 0.4 * Math.sin(t / 6 + rx);
      return { real: amp * Math.cos(ph), imag: amp * Math.sin(ph) };
    }),
  );
}

function expectBox(b: unknown): void {
  const box = b as Record<string, unknown>;
  expect(Object.keys(box).sort()).toEqual(['height', 'width', 'x', 'y']);
  for (const k of ['x', 'y', 'width', 'height']) expect(Number.isFinite(box[k]), k).toBe(true);
}

function expectKeypoints(kps: WireKeypoint[]): void {
  expect(kps.map((k) => k.name)).toEqual(COCO);
  for (const k of kps) {
    expect(Number.isFinite(k.x) && Number.isFinite(k.y)).toBe(true);
    expect(k.confidence).toBeGreaterThanOrEqual(0);
    expect(k.confidence).toBeLessThanOrEqual(1);
    expect(typeof k.visible).toBe('boolean');
  }
}

/** A Form B pose frame (latest pose, or one result of /pose/process). */
function expectFrameB(f: WireFrame, mode: string): void {
  expect(f.timestamp).toMatch(ISO_MS);
  expect(Number.isInteger(f.frame_id)).toBe(true);
  expect(typeof f.environment_id).toBe('string');
  expect(typeof f.processing_time_ms).toBe('number');
  expect(Object.keys(f.metadata).sort()).toEqual(['csi_quality', 'model_version', 'processing_mode']);
  expect(typeof f.metadata.model_version).toBe('string');
  expect(f.metadata.processing_mode).toBe(mode);
  expect(f.metadata.csi_quality).toBeGreaterThanOrEqual(0);
  expect(f.metadata.csi_quality).toBeLessThanOrEqual(1);
  for (const p of f.persons) {
    expect(Number.isInteger(p.person_id)).toBe(true);
    expect(Number.isInteger(p.track_id)).toBe(true);
    expect(p.confidence).toBeGreaterThanOrEqual(0);
    expect(p.confidence).toBeLessThanOrEqual(1);
    // A person outside the reference view has no box (docs/service.md "Reference view").
    if (p.in_view) expectBox(p.bounding_box);
    else expect(p.bounding_box).toBeUndefined();
    expectKeypoints(p.keypoints);
  }
}

/** A Form A pose frame. */
function expectFrameA(f: WireFrame, pipeline: string): void {
  expect(f.timestamp).toMatch(ISO_MS);
  expect(Number.isInteger(f.frame_id)).toBe(true);
  expect(f.environment_id).toBeUndefined();
  expect(Number.isInteger(f.processing_time_ms)).toBe(true);
  expect(Object.keys(f.metadata).sort()).toEqual(['environment_id', 'processing_pipeline', 'router_count', 'signal_quality']);
  expect(typeof f.metadata.environment_id).toBe('string');
  expect(Number.isInteger(f.metadata.router_count)).toBe(true);
  expect(typeof f.metadata.signal_quality).toBe('number');
  expect(f.metadata.processing_pipeline).toBe(pipeline);
  for (const p of f.persons) {
    expect(Number.isInteger(p.id)).toBe(true);
    expect(p.confidence).toBeGreaterThanOrEqual(0);
    expect(p.confidence).toBeLessThanOrEqual(1);
    // A person outside the reference view has no box (docs/service.md "Reference view").
    if (p.in_view) expectBox(p.bounding_box);
    else expect(p.bounding_box).toBeUndefined();
    expectKeypoints(p.keypoints);
    expect(Array.isArray(p.dense_pose?.body_parts)).toBe(true);
    expect(typeof p.tracking_info.track_id).toBe('string');
    expect(Number.isInteger(p.tracking_info.track_age)).toBe(true);
    expect(Object.keys(p.tracking_info.velocity).sort()).toEqual(['x', 'y']);
  }
}

describe('pose endpoints', () => {
  let s: TestServer;
  let token: string;
  beforeAll(async () => {
    // Threshold 0 and one hit per track: every model slot becomes a reported person at once.
    s = await startServer({ model: true, rateLimitScale: 5, config: { detection: { confidence_threshold: 0, tracking_min_hits: 1 } } });
    token = await s.login();
  });
  afterAll(() => s?.close());

  it('GET /pose/latest before any start is 503 SYSTEM_NOT_READY in both forms', async () => {
    const b = await s.api('GET', '/pose/latest', { token });
    expect(b.status).toBe(503);
    expect(b.body.error.code).toBe('SYSTEM_NOT_READY');
    expect(b.body.success).toBe(false);
    const a = await s.api('GET', '/pose/latest', { token, form: 'a' });
    expect(a.status).toBe(503);
    expect(a.body.error.code).toBe('SYSTEM_NOT_READY');
    expect(a.body.error.request_id).toBe(a.headers.get('x-request-id'));
    const proc = await s.api('POST', '/pose/process', { token, body: { csi_data: { antenna_data: packet(0) } } });
    expect(proc.status).toBe(503);
    expect(proc.body.error.code).toBe('SYSTEM_NOT_READY');
  });

  it('GET /pose/latest refuses bad query values with 422 naming the parameter', async () => {
    const cases: Array<[Record<string, string>, string]> = [
      [{ min_confidence: '1.5' }, 'min_confidence'],
      [{ min_confidence: '-0.1' }, 'min_confidence'],
      [{ min_confidence: 'high' }, 'min_confidence'],
      [{ min_confidence: '' }, 'min_confidence'],
      [{ include_keypoints: 'maybe' }, 'include_keypoints'],
      [{ include_dense_pose: 'yes' }, 'include_dense_pose'],
      [{ environment_id: '' }, 'environment_id'],
      [{ environment_id: 'e'.repeat(129) }, 'environment_id'],
      [{ limit: '5' }, 'limit'],
    ];
    for (const [query, field] of cases) {
      const b = await s.api('GET', '/pose/latest', { token, query });
      expect(b.status, JSON.stringify(query)).toBe(422);
      expect(b.body.error.code).toBe('VALIDATION_ERROR');
      expect(b.body.error.details.field).toBe(field);
      const a = await s.api('GET', '/pose/latest', { token, query, form: 'a' });
      expect(a.status).toBe(422);
      expect(a.body.error.details.field_errors.map((e: { field: string }) => e.field)).toEqual([field]);
    }
  });

  it('POST /pose/process refuses every malformed field with 422 naming it', async () => {
    const good = packet(0);
    const ragged = packet(0).map((a, i) => (i === 2 ? a.slice(0, 29) : a));
    const stringReal = packet(0);
    (stringReal[1]![4] as unknown as { real: string }).real = '0.5';
    const nullSample = packet(0);
    (nullSample[0] as unknown[])[0] = null;
    const cases: Array<[unknown, string]> = [
      [{}, 'csi_data'],
      [{ processing_options: {} }, 'csi_data'],
      [{ csi_data: 'abc' }, 'csi_data'],
      [{ csi_data: {} }, 'csi_data.antenna_data'],
      [{ csi_data: { antenna_data: 'abc' } }, 'csi_data.antenna_data'],
      [{ csi_data: { antenna_data: { 0: good[0] } } }, 'csi_data.antenna_data'],
      [{ csi_data: { antenna_data: [] } }, 'csi_data.antenna_data'],
      [{ csi_data: { antenna_data: packet(0, 10) } }, 'csi_data.antenna_data'],
      [{ csi_data: { antenna_data: [[]] } }, 'csi_data.antenna_data[0]'],
      [{ csi_data: { antenna_data: stringReal } }, 'csi_data.antenna_data[1][4]'],
      [{ csi_data: { antenna_data: nullSample } }, 'csi_data.antenna_data[0][0]'],
      [{ csi_data: { antenna_data: ragged } }, 'csi_data.antenna_data[2]'],
      [{ csi_data: { antenna_data: good, timestamp: 'yesterday' } }, 'csi_data.timestamp'],
      [{ csi_data: { antenna_data: good, metadata: { sampling_rate: 'fast' } } }, 'csi_data.metadata.sampling_rate'],
      [{ csi_data: { antenna_data: good, metadata: { router_id: 7 } } }, 'csi_data.metadata.router_id'],
      [{ csi_data: { antenna_data: good, metadata: { antenna: 'x' } } }, 'csi_data.metadata.antenna'],
      [{ csi_data: { antenna_data: good, rssi: -40 } }, 'csi_data.rssi'],
      [{ csi_data: { frames: [] } }, 'csi_data.frames'],
      [{ csi_data: { frames: [{ antenna_data: good }, { antenna_data: packet(1, 2) }] } }, 'csi_data.frames'],
      [{ csi_data: { frames: [{ antenna_data: good }, 'x'] } }, 'csi_data.frames[1]'],
      [{ csi_data: { antenna_data: good }, processing_options: { confidence_threshold: 1.5 } }, 'processing_options.confidence_threshold'],
      [{ csi_data: { antenna_data: good }, processing_options: { confidence_threshold: '0.5' } }, 'processing_options.confidence_threshold'],
      [{ csi_data: { antenna_data: good }, processing_options: { max_persons: 0 } }, 'processing_options.max_persons'],
      [{ csi_data: { antenna_data: good }, processing_options: { max_persons: 2.5 } }, 'processing_options.max_persons'],
      [{ csi_data: { antenna_data: good }, processing_options: { enable_tracking: 'yes' } }, 'processing_options.enable_tracking'],
      [{ csi_data: { antenna_data: good }, processing_options: { return_dense_pose: 1 } }, 'processing_options.return_dense_pose'],
      [{ csi_data: { antenna_data: good }, processing_options: { turbo: true } }, 'processing_options.turbo'],
      [{ csi_data: { antenna_data: good }, processing_options: 'fast' }, 'processing_options'],
      [{ csi_data: { antenna_data: good }, extra: 1 }, 'extra'],
      [[good], 'body'],
    ];
    // A string or a number where the antennas belong: named as the array it must be, and echoed.
    for (const wrong of ['abc', 42]) {
      const r = await s.api('POST', '/pose/process', { token, body: { csi_data: { antenna_data: wrong } }, form: 'a' });
      expect(r.body.error.details.field_errors[0]).toMatchObject({ field: 'csi_data.antenna_data', received_value: wrong });
      expect(r.body.error.details.field_errors[0].message).toMatch(/must be an array/);
    }
    for (const [body, field] of cases) {
      const what = `${field}: ${JSON.stringify(body).slice(0, 80)}`;
      const b = await s.api('POST', '/pose/process', { token, body });
      expect(b.status, what).toBe(422);
      expect(b.body.error.code, what).toBe('VALIDATION_ERROR');
      expect(b.body.error.details.field, what).toBe(field);
      const a = await s.api('POST', '/pose/process', { token, body, form: 'a' });
      expect(a.status, what).toBe(422);
      expect(
        a.body.error.details.field_errors.map((e: { field: string }) => e.field),
        what,
      ).toContain(field);
    }
    const empty = await s.api('POST', '/pose/process', { token });
    expect(empty.status).toBe(422);
    expect(empty.body.error.details.field).toBe('body');
    const garbage = await s.api('POST', '/pose/process', { token, rawBody: '{"csi_data": [' });
    expect(garbage.status).toBe(400);
  });

  describe('with the system running', () => {
    let frameB: WireFrame;
    beforeAll(async () => {
      expect((await s.api('POST', '/system/start', { token })).status).toBe(202);
      await waitForStatus(s, token, 'running');
      frameB = await until(async () => {
        const r = await s.api('GET', '/pose/latest', { token });
        return r.status === 200 && r.body.data.persons.length > 0 ? r.body.data : undefined;
      }, 'a pose frame with persons');
    });

    it('GET /pose/latest answers the live frame in Form B', () => {
      expectFrameB(frameB, 'live');
      expect(frameB.environment_id).toBe('default');
    });

    it('POST /pose/process: one packet of 3 antennas x 30 subcarriers gives one pose frame', async () => {
      const r = await s.api('POST', '/pose/process', {
        token,
        body: {
          csi_data: {
            timestamp: '2026-01-05T10:00:00.000Z',
            antenna_data: packet(0),
            metadata: { router_id: 'router-7', sampling_rate: 100, signal_strength: -42 },
          },
          processing_options: { confidence_threshold: 0, max_persons: 2, enable_tracking: false },
        },
      });
      expect(r.status, r.text).toBe(200);
      expect(r.body.success).toBe(true);
      const d = r.body.data;
      expect(d.processing_id).toMatch(/^proc_[0-9a-f-]{36}$/);
      expect(d.status).toBe('completed');
      expect(typeof d.processing_time_ms).toBe('number');
      expect(d.frames_received).toBe(1);
      expect(d.frames_padded).toBe(WINDOW_FRAMES - 1);
      expect(d.poses).toHaveLength(1);
      expectFrameB(d.poses[0], 'process');
      // Threshold 0 keeps every slot; max_persons caps them.
      expect(d.poses[0].persons).toHaveLength(2);
      // The frame is stamped inside the submission's time span (100 Hz from csi_data.timestamp).
      const t = Date.parse(d.poses[0].timestamp);
      expect(t).toBeGreaterThanOrEqual(Date.parse('2026-01-05T10:00:00.000Z'));
      expect(t).toBeLessThanOrEqual(Date.parse('2026-01-05T10:00:00.000Z') + (WINDOW_FRAMES - 1) * 10);

      const again = await s.api('POST', '/pose/process', { token, body: { csi_data: { antenna_data: packet(0) } } });
      expect(again.body.data.processing_id).not.toBe(d.processing_id);
    });

    it('POST /pose/process: confidence_threshold drops persons below it; Form A layout', async () => {
      const all = await s.api('POST', '/pose/process', {
        token,
        body: { csi_data: { antenna_data: packet(3) }, processing_options: { confidence_threshold: 0 } },
      });
      const confs: number[] = all.body.data.poses[0].persons.map((p: { confidence: number }) => p.confidence).sort((x: number, y: number) => x - y);
      expect(confs.length).toBeGreaterThan(0);
      // A threshold in the widest gap between confidences keeps exactly those above it (the
      // confidences shown are rounded to 0.001, so the gap must be wider than that).
      let mid = (confs[0]! + confs[confs.length - 1]!) / 2;
      let gap = 0;
      for (let i = 1; i < confs.length; i++) if (confs[i]! - confs[i - 1]! > gap) [gap, mid] = [confs[i]! - confs[i - 1]!, (confs[i]! + confs[i - 1]!) / 2];
      const some = await s.api('POST', '/pose/process', {
        token,
        body: { csi_data: { antenna_data: packet(3) }, processing_options: { confidence_threshold: mid } },
      });
      const kept = some.body.data.poses[0].persons.map((p: { confidence: number }) => p.confidence);
      for (const c of kept) expect(c).toBeGreaterThanOrEqual(mid - 0.0005);
      if (gap > 0.002) expect(kept.length).toBe(confs.filter((c) => c > mid).length);

      const a = await s.api('POST', '/pose/process', {
        token,
        form: 'a',
        body: { csi_data: { antenna_data: packet(3) }, processing_options: { confidence_threshold: 0 } },
      });
      expect(a.status).toBe(200);
      expect(a.body.status).toBe('completed');
      expect(a.body.poses).toHaveLength(1);
      expectFrameA(a.body.poses[0], 'process');
      expect(a.body.poses[0].persons.map((p: { confidence: number }) => p.confidence).sort()).toEqual([...confs].sort());
    });

    it('POST /pose/process feeds the configured site to the model, as the live pipeline does', async () => {
      const body = { csi_data: { antenna_data: packet(5) }, processing_options: { confidence_threshold: 0, enable_tracking: false } };
      const persons = async () => (await s.api('POST', '/pose/process', { token, body })).body.data.poses[0].persons;
      const blind = await persons();
      expect((await s.api('PUT', '/config', { token, body: { environment: { site: { known: true } } } })).status).toBe(200);
      try {
        const told = await persons();
        expect(told).toHaveLength(blind.length);
        expect(JSON.stringify(told)).not.toBe(JSON.stringify(blind));
      } finally {
        expect((await s.api('PUT', '/config', { token, body: { environment: { site: { known: false } } } })).status).toBe(200);
      }
      expect(JSON.stringify(await persons())).toBe(JSON.stringify(blind));
    });

    /** Windows the model reads from n packets: a short submission is padded to one window. */
    const windows = (n: number) => (n <= WINDOW_FRAMES ? 1 : 1 + Math.floor((n - WINDOW_FRAMES) / HOP));

    it('POST /pose/process: a sequence of 40 packets', async () => {
      const t0 = Date.parse('2026-01-05T10:00:00.000Z');
      const frames = Array.from({ length: 40 }, (_, i) => ({ timestamp: new Date(t0 + i * 10).toISOString(), antenna_data: packet(i) }));
      const r = await s.api('POST', '/pose/process', {
        token,
        body: { csi_data: { frames }, processing_options: { return_dense_pose: true, confidence_threshold: 0 } },
      });
      expect(r.status, r.text).toBe(200);
      const d = r.body.data;
      expect(d.status).toBe('completed');
      expect(d.frames_received).toBe(40);
      expect(d.frames_padded).toBe(Math.max(0, WINDOW_FRAMES - 40));
      expect(d.poses).toHaveLength(windows(40));
      for (const f of d.poses) {
        expectFrameB(f, 'process');
        expect(f.persons.length).toBeGreaterThan(0);
        for (const p of f.persons) {
          // Drawn over the person's box: a person outside the reference view has none.
          if (!p.in_view) {
            expect(p.dense_pose).toBeUndefined();
            continue;
          }
          expect(p.dense_pose.iuv_image).toMatch(PNG_B64);
          expect(p.dense_pose.confidence_map).toMatch(PNG_B64);
        }
      }
      // The last window ends on the last packet.
      expect(d.poses.at(-1).timestamp).toBe(frames.at(-1)!.timestamp);
    });

    it('POST /pose/process: a sequence longer than a window gives one frame per hop', async () => {
      const n = WINDOW_FRAMES + 2 * HOP;
      const t0 = Date.parse('2026-01-05T11:00:00.000Z');
      const frames = Array.from({ length: n }, (_, i) => ({ timestamp: new Date(t0 + i * 10).toISOString(), antenna_data: packet(i) }));
      const r = await s.api('POST', '/pose/process', { token, form: 'a', body: { csi_data: { frames }, processing_options: { enable_tracking: true } } });
      expect(r.status, r.text.slice(0, 300)).toBe(200);
      expect(r.body.frames_received).toBe(n);
      expect(r.body.frames_padded).toBe(0);
      expect(r.body.poses).toHaveLength(3);
      r.body.poses.forEach((f: WireFrame, i: number) => {
        expectFrameA(f, 'process');
        // Window i ends on packet WINDOW_FRAMES - 1 + i * HOP.
        expect(f.timestamp).toBe(frames[WINDOW_FRAMES - 1 + i * HOP]!.timestamp);
      });
    });

    describe('after stopping (the last frame stays readable)', () => {
      let a: WireFrame;
      let b: WireFrame;
      beforeAll(async () => {
        expect((await s.api('POST', '/system/stop', { token })).status).toBe(202);
        await waitForStatus(s, token, 'stopped');
        b = (await s.api('GET', '/pose/latest', { token })).body.data;
        a = (await s.api('GET', '/pose/latest', { token, form: 'a' })).body;
      });

      it('Form A and Form B show the same frame in their layouts', () => {
        expectFrameB(b, 'live');
        expectFrameA(a, 'live');
        expect(a.frame_id).toBe(b.frame_id);
        expect(a.timestamp).toBe(b.timestamp);
        expect(a.metadata.environment_id).toBe(b.environment_id);
        expect(a.metadata.signal_quality).toBe(b.metadata.csi_quality);
        expect(a.persons.length).toBe(b.persons.length);
        expect(b.persons.length).toBeGreaterThan(0);
        expect(a.persons.map((p) => [p.id, p.confidence, p.bounding_box])).toEqual(b.persons.map((p) => [p.person_id, p.confidence, p.bounding_box]));
        expect(a.persons[0].keypoints).toEqual(b.persons[0].keypoints);
        // The live pipeline tracks: Form B's track_id is Form A's tracking_info.track_id.
        expect(a.persons.map((p) => p.tracking_info.track_id)).toEqual(b.persons.map((p) => String(p.track_id)));
      });

      it('min_confidence filters persons', async () => {
        const confs: number[] = b.persons.map((p: { confidence: number }) => p.confidence);
        const zero = await s.api('GET', '/pose/latest', { token, query: { min_confidence: 0 } });
        expect(zero.body.data.persons.length).toBe(confs.length);
        const top = Math.max(...confs);
        if (top < 0.999) {
          const none = await s.api('GET', '/pose/latest', { token, query: { min_confidence: Math.min(1, top + 0.001) } });
          expect(none.status).toBe(200);
          expect(none.body.data.persons).toEqual([]);
          expect(none.body.data.frame_id).toBe(b.frame_id);
        }
        const distinct = [...new Set(confs)].sort((x, y) => x - y);
        if (distinct.length >= 2) {
          const mid = (distinct[0]! + distinct[1]!) / 2;
          const some = await s.api('GET', '/pose/latest', { token, form: 'a', query: { min_confidence: mid } });
          expect(some.body.persons.map((p: WirePerson) => p.id).sort()).toEqual(
            b.persons
              .filter((p) => p.confidence > mid)
              .map((p) => p.person_id)
              .sort(),
          );
        }
      });

      it('include_keypoints=false leaves keypoints out; include_dense_pose=true adds dense pose', async () => {
        for (const v of ['false', '0']) {
          const r = await s.api('GET', '/pose/latest', { token, query: { include_keypoints: v } });
          expect(r.status).toBe(200);
          for (const p of r.body.data.persons) expect('keypoints' in p).toBe(false);
          expect(r.body.data.persons.length).toBe(b.persons.length);
        }
        const ra = await s.api('GET', '/pose/latest', { token, form: 'a', query: { include_keypoints: 'false' } });
        for (const p of ra.body.persons) expect(p.keypoints).toEqual([]);
        expect('dense_pose' in b.persons[0]).toBe(false);
        const dense = await s.api('GET', '/pose/latest', { token, query: { include_dense_pose: 'true' } });
        for (const p of dense.body.data.persons) {
          // Drawn over the person's box: a person outside the reference view has none.
          if (!p.in_view) {
            expect(p.dense_pose).toBeUndefined();
            continue;
          }
          expect(p.dense_pose.iuv_image).toMatch(PNG_B64);
          expect(p.dense_pose.confidence_map).toMatch(PNG_B64);
        }
        const denseA = await s.api('GET', '/pose/latest', { token, form: 'a', query: { include_dense_pose: 'true' } });
        for (const p of denseA.body.persons) {
          for (const part of p.dense_pose.body_parts) {
            expect(part.part_id).toBeGreaterThanOrEqual(1);
            expect(part.part_id).toBeLessThanOrEqual(24);
            expect(typeof part.part_name).toBe('string');
            expect(part.uv_coordinates.every((uv: unknown) => Array.isArray(uv) && uv.length === 2)).toBe(true);
          }
        }
      });

      it('an environment without data is 404 POSE_DATA_NOT_FOUND; /pose/process needs a loaded model', async () => {
        const r = await s.api('GET', '/pose/latest', { token, query: { environment_id: 'elsewhere' } });
        expect(r.status).toBe(404);
        expect(r.body.error.code).toBe('POSE_DATA_NOT_FOUND');
        expect(r.body.error.details.available_environments).toEqual(['default']);
        const same = await s.api('GET', '/pose/latest', { token, query: { environment_id: 'default' } });
        expect(same.body.data.frame_id).toBe(b.frame_id);
        const proc = await s.api('POST', '/pose/process', { token, body: { csi_data: { antenna_data: packet(0) } } });
        expect(proc.status).toBe(503);
        expect(proc.body.error.code).toBe('SYSTEM_NOT_READY');
      });
    });
  });
});
