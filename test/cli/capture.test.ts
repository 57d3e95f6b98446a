import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeAll } from '../../src/csi/decoder.js';
import type { CsiFrame } from '../../src/csi/frame.js';
import { createStreamDecoder } from '../../src/decoders/index.js';
import { ReplayClock } from '../../src/decoders/replayClock.js';
import { ensureBuilt, ndjson, runCli } from '../helpers/cli.js';

interface Label {
  t: number;
  people: Array<{ keypoints: number[] }>;
}

/** A simulator frame as the ndjson sink prints it (NaN keypoints print as null). */
interface SimLine {
  seq: number;
  link_id?: string;
  timestamp: number;
  rssi: number[];
  noise: number;
  truth: { persons: Array<{ keypoints: Array<number | null>; visible: number[] }> };
}

const SIM = 'sim?seed=5&people=2&truth=1';
const N = 600;

beforeAll(() => ensureBuilt(), 120_000);

describe('the capture sink through the CLI: simulator -> Intel 5300 capture + COCO labels', () => {
  let tmp: string;
  let cap: string;
  let labelsPath: string;
  let run: Awaited<ReturnType<typeof runCli>>;
  let sim: SimLine[];
  let decoded: CsiFrame[];
  let labels: Label[];

  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'csipose-capture-'));
    cap = join(tmp, 'sim.dat');
    labelsPath = join(tmp, 'labels.jsonl');
    // `run --pipeline ""` is refused (an empty stage), so the identity form is `pipe "SOURCE | SINK"`.
    run = await runCli(['pipe', `${SIM} | capture path=${cap} labels=${labelsPath}`, '--fast', '--limit', String(N)], { timeoutMs: 60_000 });
    const truthRun = await runCli(['pipe', `${SIM} | ndjson`, '--fast', '--limit', String(N)], { timeoutMs: 60_000 });
    expect(truthRun.code).toBe(0);
    sim = ndjson<SimLine>(truthRun.stdout);
    decoded = existsSync(cap) ? decodeAll(createStreamDecoder('intel5300'), new Uint8Array(readFileSync(cap))).frames : [];
    labels = existsSync(labelsPath) ? ndjson<Label>(readFileSync(labelsPath, 'utf8')) : [];
  }, 120_000);

  afterAll(() => {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('an empty --pipeline is not accepted by run (hence the pipe form)', async () => {
    const r = await runCli(['run', '--source', SIM, '--pipeline', '', '--sink', `capture path=${join(tmp, 'x.dat')}`, '--fast', '--limit', '5']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/empty stage/);
  });

  it('writes every frame and reports the counts on stderr', () => {
    expect(run.code).toBe(0);
    expect(run.stderr).toBe(`capture: ${N} records -> ${cap} (${labels.length} labels -> ${labelsPath})\n`);
    expect(readFileSync(cap).length).toBe(N * 575);
  });

  it("csipose decode reads the capture back: 600 records with the simulator's seq, clock and RSSI", async () => {
    const r = await runCli(['decode', '--format', 'intel5300', cap], { timeoutMs: 60_000 });
    expect(r.code).toBe(0);
    const lines = ndjson<{ seq: number; timestamp: number; n_rx: number; n_tx: number; n_sub: number; rssi: number[]; agc: number }>(r.stdout);
    expect(lines).toHaveLength(N);
    expect(sim).toHaveLength(N);
    lines.forEach((l, i) => {
      expect([l.n_rx, l.n_tx, l.n_sub]).toEqual([3, 3, 30]);
      expect(l.seq).toBe(sim[i]!.seq);
      expect(l.timestamp).toBe(sim[i]!.timestamp);
      expect(l.rssi.map((x) => x - 44 - l.agc)).toEqual(sim[i]!.rssi);
    });
    // The simulator loses packets in bursts: seq has gaps, and the clock follows the ticks.
    expect(sim[N - 1]!.seq).toBeGreaterThan(N - 1);
  });

  it("link= keeps one receiver's frames: each of a site's receivers to its own capture", async () => {
    const one = join(tmp, 'rx2.dat');
    const r = await runCli(['pipe', `${SIM} | capture path=${one} link=tx-rx2`, '--site', '--fast', '--limit', String(N)], { timeoutMs: 60_000 });
    expect(r.code).toBe(0);
    const site = await runCli(['pipe', `${SIM} | ndjson`, '--site', '--fast', '--limit', String(N)], { timeoutMs: 60_000 });
    const lines = ndjson<SimLine>(site.stdout);
    expect(new Set(lines.map((l) => l.link_id))).toEqual(new Set(['tx-rx1', 'tx-rx2', 'tx-rx3']));
    const want = lines.filter((l) => l.link_id === 'tx-rx2');
    expect(want.length).toBeGreaterThan(N / 4);
    expect(want.length).toBeLessThan(N / 2);
    const got = decodeAll(createStreamDecoder('intel5300'), new Uint8Array(readFileSync(one))).frames;
    expect(got.map((f) => [f.seq, f.clockUs])).toEqual(want.map((l) => [l.seq, l.timestamp]));
  });

  it("labels: one per 1/10 s slot of capture time, t from the capture's own clock, strictly increasing from 0", () => {
    // Rule: t = replay time of the record (ReplayClock over timestamp_low; for this capture
    // (timestamp_low - first) / 1e6); a frame is labelled when it is the first truth-carrying frame
    // of its slot floor(t * label_hz).
    const clock = new ReplayClock(100);
    const times = decoded.map((f) => clock.advance(f) / 1000);
    expect(times.map((t, i) => t === (decoded[i]!.clockUs - decoded[0]!.clockUs) / 1e6)).not.toContain(false);
    const slotStarts: number[] = [];
    let last = -1;
    for (const t of times) {
      const slot = Math.floor(t * 10 + 1e-9);
      if (slot > last) {
        slotStarts.push(t);
        last = slot;
      }
    }
    expect(labels.map((l) => l.t)).toEqual(slotStarts);
    // About N / 100 Hz * 10 labels/s = 60; lost packets stretch 600 records over a little more than 6 s.
    expect(labels.length).toBe(Math.floor(times[N - 1]! * 10 + 1e-9) + 1);
    expect(labels.length).toBeGreaterThanOrEqual(60);
    expect(labels.length).toBeLessThanOrEqual(66);
    expect(labels[0]!.t).toBe(0);
    for (let i = 1; i < labels.length; i++) expect(labels[i]!.t).toBeGreaterThan(labels[i - 1]!.t);
  });

  it('labels: COCO-17 [x, y, score] per person, equal to the truth of the labelled frame', () => {
    const clock = new ReplayClock(100);
    const byT = new Map(decoded.map((f, i) => [clock.advance(f) / 1000, i]));
    for (const l of labels) {
      const i = byT.get(l.t)!;
      const truth = sim[i]!.truth.persons;
      expect(l.people).toHaveLength(truth.length);
      l.people.forEach((p, k) => {
        expect(p.keypoints).toHaveLength(51);
        const want: number[] = [];
        for (let j = 0; j < 17; j++) {
          const x = truth[k]!.keypoints[2 * j];
          const y = truth[k]!.keypoints[2 * j + 1];
          const seen = truth[k]!.visible[j] === 1;
          want.push(seen ? x! : 0, seen ? y! : 0, seen ? 1 : 0);
        }
        expect(p.keypoints).toEqual(want);
      });
    }
    // Seed 5 walks people partly out of the view: both kinds of keypoint occur.
    const scores = labels.flatMap((l) => l.people.flatMap((p) => p.keypoints.filter((_, j) => j % 3 === 2)));
    expect(scores).toContain(0);
    expect(scores).toContain(1);
    // The first line, spelled out: the first frame's truth keypoints as truthToJson rounds them.
    const first = sim[0]!.truth.persons;
    expect(labels[0]!.people.map((p) => p.keypoints.filter((_, j) => j % 3 !== 2))).toEqual(
      first.map((p) => p.keypoints.map((v, j) => (p.visible[j >> 1] ? v : 0))),
    );
    expect(labels[0]!.people.map((p) => p.keypoints.filter((_, j) => j % 3 === 2))).toEqual(first.map((p) => p.visible));
  });

  it('the capture replays at the times the labels carry, and the live pipeline turns it into poses', async () => {
    const r = await runCli(['pipe', `file:${cap}?format=intel5300 | ndjson`, '--fast'], { timeoutMs: 60_000 });
    expect(r.code).toBe(0);
    const frames = ndjson<{ time: string; seq: number }>(r.stdout);
    expect(frames).toHaveLength(N);
    const t0 = Date.parse(frames[0]!.time);
    const replayT = new Map(frames.map((f) => [(Date.parse(f.time) - t0) / 1000, f.seq]));
    for (const l of labels) expect(replayT.has(l.t), `a record replayed at t = ${l.t}`).toBe(true);

    const live = await runCli(['run', '--source', `file:${cap}?format=intel5300`, '--pipeline', 'live', '--sink', 'ndjson', '--fast'], {
      timeoutMs: 60_000,
    });
    expect(live.code).toBe(0);
    const poses = ndjson<{ frame_id: number; persons: unknown[] }>(live.stdout);
    // window size=128 hop=8: one pose frame per window.
    expect(poses).toHaveLength(Math.floor((N - 128) / 8) + 1);
    expect(poses.every((p) => Array.isArray(p.persons))).toBe(true);
  }, 60_000);
});

describe('the capture sink refuses what it cannot write', () => {
  let tmp: string;
  beforeAll(() => {
    tmp = mkdtempSync(join(tmpdir(), 'csipose-capture-bad-'));
  });
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('anything but CSI frames ends the run with an error naming what came', async () => {
    const r = await runCli(['pipe', `sim?seed=1 | window size=8 hop=8 | capture path=${join(tmp, 'w.dat')}`, '--fast', '--limit', '3']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('csipose: capture: expected CSI frames, got a CSI window');
  });

  it('frames an Intel 5300 record cannot hold, a missing path, an unwritable path', async () => {
    const wide = await runCli(['pipe', `sim?seed=1&nsub=56 | capture path=${join(tmp, 'n.dat')}`, '--fast', '--limit', '3']);
    expect(wide.code).toBe(1);
    expect(wide.stderr).toContain('capture: intel5300 encoder: frame 0 has 56 subcarriers');
    const none = await runCli(['pipe', 'sim?seed=1 | capture', '--fast', '--limit', '3']);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('capture: path= is required');
    const bad = await runCli(['pipe', `sim?seed=1 | capture path=${join(tmp, 'no/such/dir.dat')}`, '--fast', '--limit', '3']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/capture: cannot write .*no\/such\/dir\.dat: ENOENT/);
  });

  it('frames without truth write records and no labels; label_hz thins the labels', async () => {
    const a = await runCli(['pipe', `sim?seed=2 | capture path=${join(tmp, 'a.dat')} labels=${join(tmp, 'a.jsonl')}`, '--fast', '--limit', '50']);
    expect(a.code).toBe(0);
    expect(a.stderr).toBe(`capture: 50 records -> ${join(tmp, 'a.dat')} (0 labels -> ${join(tmp, 'a.jsonl')})\n`);
    expect(readFileSync(join(tmp, 'a.jsonl'), 'utf8')).toBe('');
    const b = await runCli([
      'pipe',
      `sim?seed=2&truth=1 | capture path=${join(tmp, 'b.dat')} labels=${join(tmp, 'b.jsonl')} label_hz=1`,
      '--fast',
      '--limit',
      '350',
    ]);
    expect(b.code).toBe(0);
    const ts = ndjson<Label>(readFileSync(join(tmp, 'b.jsonl'), 'utf8')).map((l) => Math.floor(l.t));
    // 350 records at 100 Hz span 3.5 s or a little more: one label in each of the seconds 0..3.
    expect(ts.slice(0, 4)).toEqual([0, 1, 2, 3]);
    expect(new Set(ts).size).toBe(ts.length);
  });

  it('csipose operators lists the sink and its parameters', async () => {
    const r = await runCli(['operators']);
    expect(r.stdout).toMatch(/^ {2}capture {2}/m);
    expect(r.stdout).toContain('    path=  (string)');
    expect(r.stdout).toContain('    labels=  (string)');
    expect(r.stdout).toContain('    label_hz=10  (number [0.001..100000])');
  });
});
