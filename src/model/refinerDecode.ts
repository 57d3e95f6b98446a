/**
 * How the service reads a v3 refiner's answers for one floor map (contract v3, docs/model.md):
 * which candidates are people, where each one's pelvis and skeleton are in the room, what each is
 * doing and whether they fell.
 *
 * The count is the number of accepted candidates, with the hysteresis the v2 count has
 * (COUNT_HYSTERESIS): with the candidates' person probabilities sorted, s_1 >= s_2 >= ..., the k-th
 * is "at least k people"; the count rises to k when s_k reaches the threshold + the band and falls
 * below k when s_k drops under the threshold - the band, so a probability hovering at the threshold
 * does not flip the count from map to map. The k strongest candidates are the persons, the k-th
 * with confidence s_k.
 */
import type { Camera } from '../pose/camera.js';
import { N_KEYPOINTS, type PersonPose } from '../pose/types.js';
import { MODEL_ACTIVITIES } from './contract.js';
import { hysteresisBand, hysteresisStep } from './countHysteresis.js';
import { personFromSkeleton, type ModelOutputsV3 } from './runtime.js';

/** The band around the threshold (as the v2 count's COUNT_HYSTERESIS, src/model/countHysteresis.ts). */
export const REFINER_COUNT_HYSTERESIS = 0.2;

/** What {@link RefinerDecoder.decode} needs besides the outputs. */
export interface RefinerDecodeOptions {
  /** `detection.confidence_threshold`. */
  readonly confidenceThreshold: number;
  /** `detection.max_persons`. */
  readonly maxPersons: number;
  /** The reference view the skeletons are projected through. */
  readonly camera: Camera;
  readonly includeDensePose: boolean;
}

/** One map's reading. */
export interface RefinerReading {
  readonly persons: PersonPose[];
  /** The highest fall probability of the persons (0 with nobody): the frame's `fallProbability`. */
  readonly fallProbability: number;
}

/** The count shown for one environment between maps. */
export class RefinerDecoder {
  private shown: number | null = null;
  private readonly order: number[] = [];
  private readonly skeleton = new Float64Array(N_KEYPOINTS * 3);

  /** Forgets the count shown (a stream restarted). */
  reset(): void {
    this.shown = null;
  }

  /**
   * Reads rows `start .. start + count - 1` of a batch: the candidates of one map.
   * @param out the refiner's outputs
   * @param start the map's first row in the batch
   * @param count the map's candidates
   * @param positions count x 3: each candidate's x, y, z (room metres)
   * @param o threshold, person limit, camera
   * @returns the persons (strongest first) and the frame's fall probability
   * @example
   * const { persons } = decoder.decode(out, 0, batch.count, batch.positions, { confidenceThreshold: 0.5, maxPersons: 4, camera, includeDensePose: false });
   */
  decode(out: ModelOutputsV3, start: number, count: number, positions: Float32Array, o: RefinerDecodeOptions): RefinerReading {
    if (!(start >= 0 && start + count <= out.n)) throw new RangeError(`RefinerDecoder: rows ${start}..${start + count - 1} outside a batch of ${out.n}`);
    const order = this.order;
    order.length = 0;
    for (let i = 0; i < count; i++) if (Number.isFinite(out.person[start + i]!)) order.push(i);
    order.sort((a, b) => out.person[start + b]! - out.person[start + a]! || a - b);
    const thr = o.confidenceThreshold;
    const atLeast = (t: number): number => {
      let k = 0;
      while (k < order.length && out.person[start + order[k]!]! >= t) k++;
      return k;
    };
    let n: number;
    if (this.shown === null) n = atLeast(thr);
    else {
      const h = hysteresisBand(thr, REFINER_COUNT_HYSTERESIS);
      n = hysteresisStep(this.shown, atLeast(thr + h), atLeast(thr - h));
    }
    this.shown = n;
    n = Math.min(n, Math.max(0, Math.floor(o.maxPersons)));
    const A = MODEL_ACTIVITIES.length;
    const persons: PersonPose[] = [];
    let fall = 0;
    for (let k = 0; k < n; k++) {
      const i = order[k]!;
      const r = start + i;
      const px = positions[3 * i]! + out.offset[2 * r]!;
      const py = positions[3 * i + 1]! + out.offset[2 * r + 1]!;
      const pz = out.height[r]!;
      const s = this.skeleton;
      const so = r * N_KEYPOINTS * 3;
      for (let j = 0; j < N_KEYPOINTS; j++) {
        s[3 * j] = px + out.skeleton[so + 3 * j]!;
        s[3 * j + 1] = py + out.skeleton[so + 3 * j + 1]!;
        s[3 * j + 2] = pz + out.skeleton[so + 3 * j + 2]!;
      }
      const person = personFromSkeleton(s, out.person[r]!, out.activity.subarray(r * A, r * A + A), i, o.camera, o.includeDensePose);
      // The pelvis is the refiner's own answer; the skeleton's mid-hip can differ by its rounding.
      person.floor = { x: px, y: py };
      persons.push(person);
      fall = Math.max(fall, out.fall[r]!);
    }
    return { persons, fallProbability: fall };
  }
}
