import { DEFAULT_TRACKER_OPTIONS } from '../operators/track.js';
import { MultiPersonTracker } from '../src/pose/tracker.js';
import type { PersonPose, PoseFrame } from '../src/pose/types.js';
import { Rng } from '../src/sim/rng.js';
import { consume, throughput, type BenchResult } from './lib.js';

const FRAMES = 20_000;
const PEOPLE = 3;
const T0 = 1_767_225_600_000;
const DT_MS = 100;

/**
 * `PEOPLE` people walking back and forth across a 6 x 4 m room at 0.6-1.4 m/s, seen at 10 Hz:
 * floor positions with 5 cm noise, boxes and 17 keypoints in a 640x480 view with 3 px noise,
 * detection order shuffled as a model's slots would be. Generated once, before timing.
 */
function walkers(frames: number, seed: number): PoseFrame[] {
  const rng = new Rng(seed);
  const pos = Array.from({ length: PEOPLE }, () => [rng.uniform(0.5, 5.5), rng.uniform(0.5, 3.5)] as [number, number]);
  const vel = Array.from({ length: PEOPLE }, () => {
    const speed = rng.uniform(0.6, 1.4);
    const heading = rng.uniform(0, 2 * Math.PI);
    return [speed * Math.cos(heading), speed * Math.sin(heading)] as [number, number];
  });
  const out: PoseFrame[] = [];
  const dt = DT_MS / 1000;
  for (let k = 0; k < frames; k++) {
    const persons: PersonPose[] = [];
    for (let i = 0; i < PEOPLE; i++) {
      const p = pos[i]!;
      const v = vel[i]!;
      for (let a = 0; a < 2; a++) {
        p[a] += v[a]! * dt;
        const hi = a === 0 ? 6 : 4;
        if (p[a]! < 0 || p[a]! > hi) {
          v[a] = -v[a]!;
          p[a] = Math.min(hi, Math.max(0, p[a]!));
        }
      }
      const depth = p[1]!;
      const h = 200 - 20 * depth;
      const w = 0.4 * h;
      const cx = 50 + 90 * p[0]! + rng.gaussian(0, 3);
      const cy = 330 - 25 * depth + rng.gaussian(0, 3);
      const keypoints = new Float32Array(51);
      for (let j = 0; j < 17; j++) {
        keypoints[j * 3] = cx + w * (((j * 7) % 11) / 11 - 0.5) + rng.gaussian(0, 3);
        keypoints[j * 3 + 1] = cy + h * (j / 17 - 0.5) + rng.gaussian(0, 3);
        keypoints[j * 3 + 2] = rng.uniform(0.5, 1);
      }
      persons.push({
        slot: i,
        confidence: rng.uniform(0.6, 1),
        keypoints,
        bbox: Float32Array.of(cx - w / 2, cy - h / 2, w, h),
        floor: { x: p[0]! + rng.gaussian(0, 0.05), y: p[1]! + rng.gaussian(0, 0.05) },
      });
    }
    if (rng.chance(0.5)) persons.reverse();
    out.push({
      frameId: k,
      time: T0 + k * DT_MS,
      sourceId: 'bench',
      environmentId: 'bench',
      persons,
      processingMs: 0,
      modelVersion: 'bench',
      csiQuality: 1,
    });
  }
  return out;
}

/**
 * `track.update`: MultiPersonTracker throughput on three walking people, in person-updates per
 * second (one detection assigned, filtered, recorded and emitted). Each round runs a fresh
 * tracker over the same 20,000 frames.
 */
export async function run(): Promise<BenchResult[]> {
  const frames = walkers(FRAMES, 7);
  let ids = 0;
  const round = () => {
    const tracker = new MultiPersonTracker(DEFAULT_TRACKER_OPTIONS);
    let last: PoseFrame | undefined;
    for (const f of frames) last = tracker.update(f);
    consume(last);
    ids = tracker.tracks().length + tracker.endedTracks().length;
    return last;
  };
  const r = await throughput('track.update', 'person-updates/s', round, { items: FRAMES * PEOPLE, rounds: 7 });
  r.note = `${PEOPLE} walkers, ${FRAMES.toLocaleString('en-US')} frames at 10 Hz per round; ${ids} track id(s) issued`;
  return [r];
}
