import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { Activity, PersonPose, PoseFrame } from '../src/pose/types.js';
import { Rng } from '../src/sim/rng.js';
import { PoseSink } from '../src/store/poseSink.js';
import { Store } from '../src/store/store.js';
import { consume, throughput, type BenchResult } from './lib.js';

const FRAMES = 10_000;
const PEOPLE = 3;
/** Frames handed to the sink between yields to the event loop, as a live pipeline would. */
const BURST = 50;
const T0 = 1_767_225_600_000;
const ACTS: readonly Activity[] = ['walking', 'standing', 'sitting'];

/**
 * Tracked pose frames as the live pipeline stores them: three persons at 10 Hz with 17 keypoints,
 * a box, a floor position and velocity, a track id and an activity. Generated once, before timing.
 */
function frames(n: number, seed: number): PoseFrame[] {
  const rng = new Rng(seed);
  const out: PoseFrame[] = [];
  for (let k = 0; k < n; k++) {
    const persons: PersonPose[] = [];
    for (let i = 0; i < PEOPLE; i++) {
      const keypoints = new Float32Array(51);
      const cx = rng.uniform(100, 540);
      const cy = rng.uniform(150, 330);
      for (let j = 0; j < 17; j++) {
        keypoints[j * 3] = cx + rng.gaussian(0, 30);
        keypoints[j * 3 + 1] = cy + rng.gaussian(0, 60);
        keypoints[j * 3 + 2] = rng.uniform(0.4, 1);
      }
      persons.push({
        slot: i,
        confidence: rng.uniform(0.6, 1),
        keypoints,
        bbox: Float32Array.of(cx - 40, cy - 100, 80, 200),
        floor: { x: rng.uniform(0, 6), y: rng.uniform(0, 4) },
        velocity: { x: rng.gaussian(0, 0.5), y: rng.gaussian(0, 0.5) },
        trackId: i + 1,
        trackAge: k,
        activity: ACTS[(k + i) % ACTS.length]!,
        activityConfidence: rng.uniform(0.5, 1),
      });
    }
    out.push({
      frameId: k,
      time: T0 + k * 100,
      sourceId: 'bench',
      environmentId: 'bench',
      persons,
      processingMs: rng.uniform(3, 8),
      modelVersion: 'bench',
      csiQuality: rng.uniform(0.8, 1),
    });
  }
  return out;
}

/**
 * `store.ingest`: pose_persons rows per second (each with its 204-byte keypoint BLOB, plus the
 * frame row) through a PoseSink with its default bounds (2,000 rows / 250 ms) into a DuckDB file
 * in a temp dir, frames handed over in bursts of 50 with a yield between, until the last batch has
 * committed. `store.ingest.frames` is the same runs counted in frames. Also reports the event-loop
 * delay p99 during ingestion: the sink appends on the main thread, so this is what a batch costs
 * the rest of the process. `store.ingest.engine` is the ceiling: the same rows copied by DuckDB
 * itself, in transactions of the sink's batch size, with no client code at all.
 */
export async function run(): Promise<BenchResult[]> {
  const data = frames(FRAMES, 11);
  const dir = mkdtempSync(join(tmpdir(), 'csipose-bench-store-'));
  const store = await Store.open(join(dir, 'bench.duckdb'));
  const loop = monitorEventLoopDelay({ resolution: 1 });
  let flushes = 0;
  let lastFlushMs = 0;
  let errors = 0;
  try {
    const round = async () => {
      const sink = new PoseSink(store, { onError: () => errors++ });
      for (let k = 0; k < data.length; k++) {
        sink.write(data[k]!);
        if (k % BURST === BURST - 1) await new Promise((r) => setImmediate(r));
      }
      await sink.close();
      const s = sink.stats;
      flushes = s.flushes;
      lastFlushMs = s.lastFlushMs;
      if (s.persons !== FRAMES * PEOPLE) throw new Error(`sink wrote ${s.persons} person rows, expected ${FRAMES * PEOPLE}`);
      return s;
    };
    // Warm-up rounds run outside the histogram; the timed rounds inside it.
    await round();
    loop.enable();
    const rows = await throughput('store.ingest', 'rows/s', round, { items: FRAMES * PEOPLE, rounds: 7, warmup: 1 });
    loop.disable();
    const [total] = await store.query<{ n: number }>(`SELECT count(*) AS n FROM pose_persons`);
    consume(total);
    rows.note = `pose_persons rows with keypoint BLOBs, ${PEOPLE} persons/frame, ${FRAMES.toLocaleString('en-US')} frames per round, ${flushes} batches/round (last ${lastFlushMs.toFixed(1)} ms), ${errors} errors`;
    const framesPerS: BenchResult = {
      name: 'store.ingest.frames',
      value: rows.value / PEOPLE,
      unit: 'frames/s',
      n: rows.n / PEOPLE,
      ...(rows.spread !== undefined ? { spread: rows.spread } : {}),
      note: 'the store.ingest runs, counted in frames (one pose_frames row + 3 pose_persons rows each)',
    };
    const lag: BenchResult = {
      name: 'store.ingest.loop_delay_p99',
      value: loop.percentile(99) / 1e6,
      unit: 'ms',
      n: loop.count,
      note: `event-loop delay during the timed rounds (max ${(loop.max / 1e6).toFixed(1)} ms)`,
    };
    // The engine alone: the same rows again, copied by DuckDB from tables of the same rows, in as
    // many transactions per round as the sink's last round took; no client code. Whatever a
    // writer in this process does, it does not get past this on this machine.
    const batches = Math.max(1, flushes);
    const bounds = await store.withWriter(async (conn) => {
      await conn.run(`CREATE TEMP TABLE src_f AS SELECT * FROM pose_frames ORDER BY seq LIMIT ${FRAMES}`);
      await conn.run(`CREATE TEMP TABLE src_p AS SELECT * FROM pose_persons WHERE seq IN (SELECT seq FROM src_f) ORDER BY seq, slot`);
      const seqs = (await conn.runAndReadAll(`SELECT seq FROM src_f ORDER BY seq`)).getRows().map((r) => BigInt(r[0] as bigint));
      return Array.from({ length: batches + 1 }, (_, b) => (b === batches ? seqs.at(-1)! + 1n : seqs[Math.floor((b * seqs.length) / batches)]!));
    });
    const engineRound = () =>
      store.withWriter(async (conn) => {
        for (let b = 0; b < batches; b++) {
          const range = `seq >= ${bounds[b]} AND seq < ${bounds[b + 1]}`;
          await conn.run('BEGIN TRANSACTION');
          await conn.run(`INSERT INTO pose_frames SELECT * FROM src_f WHERE ${range}`);
          await conn.run(`INSERT INTO pose_persons SELECT * FROM src_p WHERE ${range}`);
          await conn.run('COMMIT');
        }
      });
    const engine = await throughput('store.ingest.engine', 'rows/s', engineRound, { items: FRAMES * PEOPLE, rounds: 7, warmup: 1 });
    engine.note = `the same rows copied by DuckDB itself (INSERT ... SELECT from tables of them), ${batches} transactions per round as the sink's: the engine's ceiling for store.ingest on this machine (store.ingest is ${((rows.value / engine.value) * 100).toFixed(0)} % of it)`;
    return [rows, framesPerS, lag, engine];
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
