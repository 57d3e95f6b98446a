import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Activity, ActivityEvent, PersonPose, PoseAlert, PoseFrame } from '../../src/pose/types.js';
import { PoseSink } from '../../src/store/poseSink.js';
import { blobToFloats } from '../../src/store/schema.js';
import { Store, StoreError } from '../../src/store/store.js';
import { storeOutlet } from '../helpers/storeOutlet.js';
import { tempDirs } from '../helpers/dataDir.js';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0, 7);

const tempDir = tempDirs('csipose-sink-', 'each');
function dbPath(name = 'pose.duckdb'): string {
  return join(tempDir(), name);
}

/** A person whose every value is derived from (frame k, slot i), so a read-back can be checked exactly. */
function person(k: number, i: number, extra: Partial<PersonPose> = {}): PersonPose {
  const keypoints = new Float32Array(51);
  for (let j = 0; j < 17; j++) {
    keypoints[j * 3] = 100.25 + 10 * i + j + k / 8;
    keypoints[j * 3 + 1] = 200.5 + 3 * j - k / 16;
    keypoints[j * 3 + 2] = 0.5 + j / 40;
  }
  return {
    slot: i,
    confidence: 0.6 + i / 10 + k / 1000,
    keypoints,
    bbox: Float32Array.of(90 + 10 * i, 180 - k, 60.5, 150.25),
    ...extra,
  };
}

function frame(k: number, nPersons = 3, extra: Partial<PoseFrame> = {}): PoseFrame {
  return {
    frameId: k,
    time: T0 + k * 100,
    sourceId: 'sim-1',
    environmentId: 'lab',
    persons: Array.from({ length: nPersons }, (_, i) => person(k, i)),
    processingMs: 4.5 + k / 4,
    modelVersion: 'mlp-1.2',
    csiQuality: 0.875,
    ...extra,
  };
}

/** Waits (real time, tens of ms per step) until `cond` holds, failing after `ms`. */
async function until(cond: () => boolean, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function count(store: Store, table: string): Promise<number> {
  const [r] = await store.query<{ n: number }>(`SELECT count(*) AS n FROM ${table}`);
  return r!.n;
}

describe('PoseSink', () => {
  it('writes frames, persons, events and alerts that read back exactly', async () => {
    const store = await Store.open(dbPath());
    const errors: StoreError[] = [];
    const sink = new PoseSink(store, { maxDelayMs: 10_000, onError: (e) => errors.push(e) });
    const densePose = Float32Array.from({ length: 72 }, (_, j) => j / 72);
    const tracked = person(1, 0, {
      trackId: 17,
      trackAge: 42,
      floor: { x: 2.5, y: 1.25 },
      velocity: { x: -0.5, y: 0.75 },
      activity: 'walking',
      activityConfidence: 0.9,
      densePose,
    });
    const event: ActivityEvent = {
      eventId: 'evt_lab_17_1_fall',
      type: 'fall_detection',
      severity: 'high',
      time: T0 + 95,
      environmentId: 'lab',
      personId: 17,
      trackId: 17,
      confidence: 0.93,
      location: { x: 2.5, y: 1.25 },
      metadata: { fall_duration: 1.5, impact_severity: 'moderate', recovery_detected: false },
      actionsTaken: ['alert_sent', 'notification_dispatched'],
    };
    const alert: PoseAlert = {
      alertId: 'alrt_lab_17_1_intrusion',
      type: 'intrusion',
      severity: 'critical',
      time: T0 + 100,
      environmentId: 'lab',
      personId: 17,
      trackId: 17,
      confidence: 0.81,
      location: { x: 4, y: 0.5 },
      zone: 'vault',
      metadata: { zone: 'vault', nested: { a: [1, 2] } },
      actionsRequired: ['notify_security'],
    };
    const f0 = frame(0, 2);
    const f1 = frame(1, 0, { persons: [tracked, person(1, 1)], events: [event], alerts: [alert] });
    const f2 = frame(2, 0);
    expect(sink.write(f0)).toBe(true);
    expect(sink.write(f1)).toBe(true);
    expect(sink.write(f2)).toBe(true);
    expect(sink.stats).toMatchObject({ pending: 3 + 4 + 1 + 1, written: 0 });
    await sink.flush();
    expect(sink.stats).toMatchObject({ pending: 0, written: 9, flushes: 1, dropped: 0, frames: 3, persons: 4, events: 1, alerts: 1 });
    expect(errors).toEqual([]);

    const frames = await store.query(
      `SELECT epoch_ms(ts) AS t, ts, environment_id, source_id, frame_id, person_count, processing_ms, model_version, csi_quality, avg_confidence, max_confidence
       FROM pose_frames ORDER BY ts`,
    );
    expect(frames).toHaveLength(3);
    for (const [k, f] of [f0, f1, f2].entries()) {
      const confs = f.persons.map((p) => p.confidence);
      expect(frames[k]).toEqual({
        t: f.time,
        ts: new Date(f.time),
        environment_id: 'lab',
        source_id: 'sim-1',
        frame_id: f.frameId,
        person_count: f.persons.length,
        processing_ms: Math.fround(f.processingMs),
        model_version: 'mlp-1.2',
        csi_quality: 0.875,
        avg_confidence: confs.length ? Math.fround(confs.reduce((a, b) => a + b, 0) / confs.length) : null,
        max_confidence: confs.length ? Math.fround(Math.max(...confs)) : null,
      });
    }

    const persons = await store.query(`SELECT * , epoch_ms(ts) AS t FROM pose_persons ORDER BY ts, slot`);
    const expected = [...f0.persons.map((p) => [f0, p] as const), ...f1.persons.map((p) => [f1, p] as const)];
    expect(persons).toHaveLength(expected.length);
    for (const [k, [f, p]] of expected.entries()) {
      const row = persons[k]!;
      expect(row['t']).toBe(f.time);
      expect(row['frame_id']).toBe(f.frameId);
      expect(row['environment_id']).toBe('lab');
      expect(row['slot']).toBe(p.slot);
      expect(row['person_id']).toBe(p.trackId ?? p.slot);
      expect(row['track_id']).toBe(p.trackId ?? null);
      expect(row['track_age']).toBe(p.trackAge ?? null);
      expect(row['confidence']).toBe(Math.fround(p.confidence));
      expect([row['bbox_x'], row['bbox_y'], row['bbox_w'], row['bbox_h']]).toEqual(Array.from(p.bbox));
      expect(row['floor_x']).toBe(p.floor?.x ?? null);
      expect(row['floor_y']).toBe(p.floor?.y ?? null);
      expect(row['velocity_x']).toBe(p.velocity?.x ?? null);
      expect(row['velocity_y']).toBe(p.velocity?.y ?? null);
      expect(row['activity']).toBe(p.activity ?? null);
      expect(row['activity_confidence']).toBe(p.activityConfidence === undefined ? null : Math.fround(p.activityConfidence));
      const kp = row['keypoints'] as Uint8Array;
      expect(kp.byteLength).toBe(204);
      expect(blobToFloats(kp)).toEqual(p.keypoints);
      if (p.densePose) expect(blobToFloats(row['dense_pose'] as Uint8Array)).toEqual(p.densePose);
      else expect(row['dense_pose']).toBeNull();
    }

    const [ev] = await store.query(`SELECT *, epoch_ms(ts) AS t FROM activity_events`);
    expect(ev).toMatchObject({
      t: event.time,
      event_id: event.eventId,
      type: 'fall_detection',
      severity: 'high',
      environment_id: 'lab',
      person_id: 17,
      track_id: 17,
      confidence: 0.93,
      location_x: 2.5,
      location_y: 1.25,
      actions_taken: ['alert_sent', 'notification_dispatched'],
    });
    expect(JSON.parse(ev!['metadata'] as string)).toEqual(event.metadata);
    const [al] = await store.query(`SELECT *, epoch_ms(ts) AS t, metadata->>'$.nested.a[1]' AS second FROM alerts`);
    expect(al).toMatchObject({
      t: alert.time,
      alert_id: alert.alertId,
      type: 'intrusion',
      severity: 'critical',
      zone: 'vault',
      confidence: 0.81,
      location_x: 4,
      location_y: 0.5,
      actions_required: ['notify_security'],
      second: '2',
    });
    expect(JSON.parse(al!['metadata'] as string)).toEqual(alert.metadata);
    await store.close();
  });

  it('flushes when maxRows rows are buffered, and not before', async () => {
    const store = await Store.open(dbPath());
    const sink = new PoseSink(store, { maxRows: 12, maxDelayMs: 60_000 });
    sink.write(frame(0)); // 4 rows
    sink.write(frame(1)); // 8 rows
    await new Promise((r) => setTimeout(r, 50));
    expect(sink.stats).toMatchObject({ written: 0, pending: 8, flushes: 0 });
    sink.write(frame(2)); // 12 rows: the size bound
    await until(() => sink.stats.flushes === 1);
    expect(sink.stats).toMatchObject({ written: 12, pending: 0 });
    expect(await count(store, 'pose_persons')).toBe(9);
    await store.close();
  });

  it('flushes maxDelayMs after the first buffered row', async () => {
    const store = await Store.open(dbPath());
    const sink = new PoseSink(store, { maxRows: 10_000, maxDelayMs: 30 });
    sink.write(frame(0, 1));
    expect(sink.stats).toMatchObject({ written: 0, pending: 2 });
    await until(() => sink.stats.flushes === 1);
    expect(sink.stats).toMatchObject({ written: 2, pending: 0 });
    expect(await count(store, 'pose_frames')).toBe(1);
    // A later row arms the timer again.
    sink.write(frame(1, 1));
    await until(() => sink.stats.flushes === 2);
    expect(await count(store, 'pose_frames')).toBe(2);
    await store.close();
  });

  it('serialises flushes: one runs, later calls share the one queued behind it, rows written once', async () => {
    const store = await Store.open(dbPath());
    const sink = new PoseSink(store, { maxRows: 100_000, maxDelayMs: 60_000 });
    for (let k = 0; k < 5; k++) sink.write(frame(k));
    const p1 = sink.flush();
    for (let k = 5; k < 10; k++) sink.write(frame(k));
    const p2 = sink.flush();
    const p3 = sink.flush();
    expect(p3).toBe(p2);
    expect(p2).not.toBe(p1);
    await Promise.all([p1, p2, p3]);
    expect(sink.stats).toMatchObject({ flushes: 2, written: 40, pending: 0 });
    const ids = await store.query<{ frame_id: number }>(`SELECT frame_id FROM pose_frames ORDER BY frame_id`);
    expect(ids.map((r) => r.frame_id)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(await count(store, 'pose_persons')).toBe(30);
    await store.close();
  });

  it('writes more than one data chunk per batch', async () => {
    const store = await Store.open(dbPath());
    const sink = new PoseSink(store, { maxRows: 100_000, maxDelayMs: 60_000 });
    for (let k = 0; k < 1000; k++) sink.write(frame(k));
    await sink.flush();
    expect(sink.stats).toMatchObject({ written: 4000, flushes: 1 });
    const [r] = await store.query(`SELECT count(*) AS n, count(DISTINCT frame_id) AS f, sum(octet_length(keypoints)) AS bytes FROM pose_persons`);
    expect(r).toEqual({ n: 3000, f: 1000, bytes: 3000 * 204 });
    const [last] = await store.query(`SELECT keypoints FROM pose_persons WHERE frame_id = 999 AND slot = 2`);
    expect(blobToFloats(last!['keypoints'] as Uint8Array)).toEqual(person(999, 2).keypoints);
    await store.close();
  });

  it('stores edge values exactly: strings about the 12-byte inline limit, extreme times and ids, NULLs across chunks', async () => {
    const store = await Store.open(dbPath());
    const sink = new PoseSink(store, { maxRows: 100_000, maxDelayMs: 60_000 });
    // UTF-8 lengths 0, 12, 13, multibyte, a lone surrogate (stored as U+FFFD), and a long one.
    const names = ['', 'abcdefghijkl', 'abcdefghijklm', 'räume-ü', '😀😀😀', '\ud800x', 'x'.repeat(300)];
    const stored = (s: string) => s.replace('\ud800', '\ufffd');
    // Both ends of the times a sink takes, and both sides of 1970: their microseconds pass 2^53.
    const times = [-(8.64e15 - 1), -1, 0, 8.64e15 - 1, Date.UTC(2026, 0, 1)];
    const ids = [-(2 ** 53 - 1), -1, 2 ** 53 - 1];
    const N = 2100;
    for (let k = 0; k < N; k++) {
      const name = names[k % names.length]!;
      // The activity column takes any string: the edge names stand in for an activity here.
      const p = person(k, 0, k % 3 === 0 ? { trackId: 2 ** 31 - 1, floor: { x: 1, y: NaN }, activity: name as Activity } : { trackId: -(2 ** 31 - 1) });
      const anonymous = { ...person(k, 1), keypoints: new Float32Array(0) };
      sink.write(
        frame(k, 0, {
          frameId: ids[k % ids.length]!,
          time: times[k % times.length]!,
          environmentId: name,
          sourceId: stored(name),
          modelVersion: name,
          persons: [p, anonymous],
        }),
      );
    }
    await sink.flush();
    expect(sink.stats).toMatchObject({ written: 3 * N, dropped: 0 });
    const frames = await store.query(`SELECT ts, environment_id, source_id, model_version, frame_id FROM pose_frames ORDER BY seq`);
    const persons = await store.query(
      `SELECT environment_id, frame_id, track_id, floor_x, floor_y, activity, octet_length(keypoints) AS kp FROM pose_persons ORDER BY seq, slot`,
    );
    expect(frames).toHaveLength(N);
    expect(persons).toHaveLength(2 * N);
    for (let k = 0; k < N; k++) {
      const name = stored(names[k % names.length]!);
      const id = ids[k % ids.length]!;
      expect(frames[k]).toEqual({ ts: new Date(times[k % times.length]!), environment_id: name, source_id: name, model_version: name, frame_id: id });
      const tracked = k % 3 === 0;
      expect(persons[2 * k]).toEqual({
        environment_id: name,
        frame_id: id,
        track_id: tracked ? 2 ** 31 - 1 : -(2 ** 31 - 1),
        floor_x: tracked ? 1 : null,
        floor_y: null,
        activity: tracked ? name : null,
        kp: 204,
      });
      expect(persons[2 * k + 1]).toMatchObject({ environment_id: name, track_id: null, kp: 0 });
    }
    // Times at the ends of the range, to the microsecond.
    const [edges] = await store.query(`SELECT min(epoch_us(ts)) AS lo, max(epoch_us(ts)) AS hi FROM pose_persons`);
    expect(edges).toEqual({ lo: -8639999999999999000n, hi: 8639999999999999000n });
    await store.close();
  });

  it('close flushes, and the rows survive reopening the file', async () => {
    const path = dbPath('durable.duckdb');
    const store = await Store.open(path);
    const sink = new PoseSink(store, { maxRows: 100_000, maxDelayMs: 60_000 });
    for (let k = 0; k < 20; k++) sink.write(frame(k, 2));
    expect(sink.stats.written).toBe(0);
    await store.close(); // closes the attached sink first
    expect(sink.closed).toBe(true);
    expect(sink.stats).toMatchObject({ written: 60, pending: 0, dropped: 0 });
    const again = await Store.open(path);
    expect(await count(again, 'pose_frames')).toBe(20);
    const [r] = await again.query(`SELECT keypoints, epoch_ms(ts) AS t FROM pose_persons WHERE frame_id = ? AND slot = ?`, [13, 1]);
    expect(r!['t']).toBe(T0 + 1300);
    expect(blobToFloats(r!['keypoints'] as Uint8Array)).toEqual(person(13, 1).keypoints);
    await again.close();
  });

  it('reports writes after close through onError, without throwing, and counts them', async () => {
    const store = await Store.open(dbPath());
    const errors: StoreError[] = [];
    const sink = new PoseSink(store, { onError: (e) => errors.push(e) });
    await sink.close();
    expect(() => sink.write(frame(0))).not.toThrow();
    expect(sink.write(frame(1))).toBe(false);
    expect(errors.length).toBeGreaterThanOrEqual(1);
    expect(errors[0]).toBeInstanceOf(StoreError);
    expect(errors[0]!.reason).toBe('closed');
    expect(sink.stats).toMatchObject({ dropped: 8, written: 0, pending: 0 });

    // The same through the store: closing it closes its sinks.
    const sink2 = new PoseSink(store, { onError: (e) => errors.push(e) });
    await store.close();
    errors.length = 0;
    expect(sink2.write(frame(2))).toBe(false);
    expect(errors.map((e) => e.reason)).toEqual(['closed']);
    expect(sink2.stats.dropped).toBe(4);
  });

  it('keeps rows when DuckDB refuses a batch, retries them, and caps the buffer', async () => {
    const store = await Store.open(dbPath());
    const errors: StoreError[] = [];
    const sink = new PoseSink(store, { maxRows: 4, maxDelayMs: 5, retryDelayMs: 20, maxPendingRows: 12, onError: (e) => errors.push(e) });
    // Break the schema under the sink: every batch now fails inside DuckDB.
    await store.execute(`ALTER TABLE alerts RENAME TO alerts_away`);
    sink.write(frame(0));
    await until(() => sink.stats.failedFlushes >= 1);
    expect(errors[0]!.message).toMatch(/not written, kept for retry/);
    expect(sink.stats).toMatchObject({ written: 0, pending: 4 });
    expect(await count(store, 'pose_frames')).toBe(0); // the batch rolled back whole
    expect(store.health().status).toBe('degraded');
    sink.write(frame(1));
    sink.write(frame(2));
    // 12 rows pending: the cap. The next frame is refused, counted and reported.
    expect(sink.write(frame(3))).toBe(false);
    expect(sink.stats).toMatchObject({ pending: 12, dropped: 4 });
    expect(errors.some((e) => /buffer full/.test(e.message))).toBe(true);
    // Repair: the retry writes every kept row exactly once.
    await store.execute(`ALTER TABLE alerts_away RENAME TO alerts`);
    await until(() => sink.stats.written === 12);
    expect(sink.stats).toMatchObject({ pending: 0, dropped: 4 });
    const ids = await store.query<{ frame_id: number }>(`SELECT frame_id FROM pose_frames ORDER BY frame_id`);
    expect(ids.map((r) => r.frame_id)).toEqual([0, 1, 2]);
    expect(store.health().status).toBe('healthy');
    // After a success, batches go by the normal bounds again.
    sink.write(frame(4));
    await until(() => sink.stats.written === 16);
    await store.close();
  });

  it('counts and reports rows it cannot write by close', async () => {
    const store = await Store.open(dbPath());
    const errors: StoreError[] = [];
    const sink = new PoseSink(store, { maxRows: 1000, maxDelayMs: 60_000, retryDelayMs: 60_000, onError: (e) => errors.push(e) });
    await store.execute(`ALTER TABLE pose_persons RENAME TO elsewhere`);
    sink.write(frame(0));
    sink.write(frame(1, 1));
    await sink.close();
    expect(sink.stats).toMatchObject({ written: 0, pending: 0, dropped: 6 });
    expect(errors.at(-1)!.message).toMatch(/gave up 6 unwritten row\(s\)/);
    await store.close();
  });

  it('drops malformed persons and frames with a report, and writes the rest', async () => {
    const store = await Store.open(dbPath());
    const errors: StoreError[] = [];
    const sink = new PoseSink(store, { onError: (e) => errors.push(e) });
    const bad = { ...person(0, 1), keypoints: new Float32Array(10) };
    expect(sink.write(frame(0, 0, { persons: [person(0, 0), bad, person(0, 2)] }))).toBe(true);
    expect(sink.write(frame(1, 1, { time: Number.NaN }))).toBe(false);
    expect(sink.write(null as unknown as PoseFrame)).toBe(false);
    await sink.flush();
    expect(sink.stats).toMatchObject({ written: 3, dropped: 1 + 2 + 1 });
    expect(errors.map((e) => e.reason)).toEqual(['invalid']);
    const rows = await store.query(`SELECT slot FROM pose_persons ORDER BY slot`);
    expect(rows).toEqual([{ slot: 0 }, { slot: 2 }]);
    expect(await store.query(`SELECT person_count FROM pose_frames`)).toEqual([{ person_count: 3 }]);
    await store.close();
  });

  it('never lets a throwing onError escape', async () => {
    const store = await Store.open(dbPath());
    const sink = new PoseSink(store, {
      onError: () => {
        throw new Error('handler broke');
      },
    });
    await sink.close();
    expect(() => sink.write(frame(0))).not.toThrow();
    await store.close();
  });
});

/** The frame ids stored, in storage order. */
async function storedFrameIds(store: Store): Promise<number[]> {
  const rows = await store.query<{ id: number }>('SELECT frame_id AS id FROM pose_frames ORDER BY seq');
  return rows.map((r) => Number(r.id));
}

describe("the store outlet (the service's path into the sink)", () => {
  it('stores every frame of the pose stream, all of it by the stop step flush_sinks', async () => {
    const store = await Store.open(dbPath());
    const out = storeOutlet(store, { maxRows: 100_000, maxDelayMs: 60_000 });
    const input = Array.from({ length: 25 }, (_, k) => frame(k, 2));
    for (const f of input) out.push(f);
    expect(out.sink.stats).toMatchObject({ written: 0, pending: 75 });
    await out.flushSinks();
    expect(out.sink.stats).toMatchObject({ written: 75, pending: 0 });
    expect(await count(store, 'pose_frames')).toBe(25);
    expect(await storedFrameIds(store)).toEqual(input.map((f) => f.frameId));
    expect(out.report()).toMatchObject({ status: 'healthy', written: 75, frames: 25, persons: 50 });
    expect(out.outletErrors).toEqual([]);
    out.close();
    await store.close();
  });

  it('stores what came before the stream went quiet (a pipeline fault) without a stop', async () => {
    const store = await Store.open(dbPath());
    const out = storeOutlet(store, { maxRows: 100_000, maxDelayMs: 20 });
    out.push(frame(0));
    out.push(frame(1));
    // A faulted session emits nothing more and runs no stop step: the sink's time bound writes.
    await until(() => out.sink.stats.written === 8);
    expect(out.sink.stats).toMatchObject({ written: 8, pending: 0, flushes: 1 });
    expect(await count(store, 'pose_frames')).toBe(2);
    expect(await storedFrameIds(store)).toEqual([0, 1]);
    out.close();
    await store.close();
  });

  it('stores what it took before it was detached, and nothing after', async () => {
    const store = await Store.open(dbPath());
    const out = storeOutlet(store, { maxRows: 100_000, maxDelayMs: 60_000 });
    out.push(frame(0));
    out.close();
    out.push(frame(1));
    expect(out.report()).toBeUndefined();
    await out.sink.flush();
    expect(out.sink.stats.written).toBe(4);
    expect(await storedFrameIds(store)).toEqual([0]);
    await store.close();
  });
});
