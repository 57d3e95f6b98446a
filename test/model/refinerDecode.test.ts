import { describe, expect, it } from 'vitest';
import { RefinerDecoder, REFINER_COUNT_HYSTERESIS } from '../../src/model/refinerDecode.js';
import type { ModelOutputsV3 } from '../../src/model/runtime.js';
import { DEFAULT_VIEW, viewCamera } from '../../src/pose/camera.js';

const camera = viewCamera(DEFAULT_VIEW);
const opts = { confidenceThreshold: 0.5, maxPersons: 4, camera, includeDensePose: false };

/** Outputs for candidates with these person probabilities; every other head fixed and simple. */
function outputs(person: number[], extra: Partial<Pick<ModelOutputsV3, 'offset' | 'height' | 'fall' | 'activity' | 'skeleton'>> = {}): ModelOutputsV3 {
  const n = person.length;
  const activity = new Float32Array(n * 5);
  for (let i = 0; i < n; i++) activity[i * 5] = 1;
  return {
    contract: 3,
    n,
    maxPersons: 6,
    person: Float32Array.from(person),
    offset: extra.offset ?? new Float32Array(n * 2),
    height: extra.height ?? new Float32Array(n).fill(0.95),
    heading: new Float32Array(n * 2),
    activity: extra.activity ?? activity,
    fall: extra.fall ?? new Float32Array(n),
    skeleton: extra.skeleton ?? new Float32Array(n * 51),
  };
}
const positions = (n: number) => Float32Array.from({ length: n * 3 }, (_, i) => (i % 3 === 2 ? 1 : 1 + Math.floor(i / 3)));

describe('RefinerDecoder', () => {
  it('counts the candidates at or over the threshold on the first map, strongest first', () => {
    const d = new RefinerDecoder();
    const r = d.decode(outputs([0.2, 0.9, 0.6]), 0, 3, positions(3), opts);
    expect(r.persons.map((p) => p.slot)).toEqual([1, 2]);
    expect(r.persons.map((p) => p.confidence)).toEqual([Math.fround(0.9), Math.fround(0.6)]);
  });

  // Each row: the k-th probability over successive maps and the count shown after each.
  const h = REFINER_COUNT_HYSTERESIS;
  it.each([
    { name: 'rises only at threshold + band', seconds: [0.4, 0.6, 0.5 + h - 0.01, 0.5 + h + 0.01], counts: [1, 1, 1, 2] },
    { name: 'falls only under threshold - band', seconds: [0.9, 0.45, 0.5 - h + 0.01, 0.5 - h - 0.01], counts: [2, 2, 2, 1] },
  ])('hysteresis: $name', ({ seconds, counts }) => {
    const d = new RefinerDecoder();
    const shown = seconds.map((s) => d.decode(outputs([0.95, s]), 0, 2, positions(2), opts).persons.length);
    expect(shown).toEqual(counts);
  });

  it('a candidate gone from the map takes its count with it', () => {
    const d = new RefinerDecoder();
    expect(d.decode(outputs([0.95, 0.95]), 0, 2, positions(2), opts).persons.length).toBe(2);
    expect(d.decode(outputs([0.95]), 0, 1, positions(1), opts).persons.length).toBe(1);
    expect(d.decode(outputs([]), 0, 0, positions(0), opts).persons.length).toBe(0);
  });

  it('caps the persons at maxPersons', () => {
    const d = new RefinerDecoder();
    expect(d.decode(outputs([0.9, 0.9, 0.9]), 0, 3, positions(3), { ...opts, maxPersons: 2 }).persons.length).toBe(2);
  });

  it('places the pelvis at the candidate plus the offset, at the height, and the skeleton around it', () => {
    const skeleton = new Float32Array(51);
    skeleton[11 * 3] = 0.1; // left hip 0.1 m to +x, right hip 0.1 m to -x: mid-hip at the pelvis
    skeleton[12 * 3] = -0.1;
    skeleton[0 * 3 + 2] = 0.7; // nose 0.7 m above the pelvis
    const out = outputs([0.9], { offset: Float32Array.of(0.3, -0.2), height: Float32Array.of(0.5), skeleton });
    const [p] = new RefinerDecoder().decode(out, 0, 1, Float32Array.of(2, 3, 1), opts).persons;
    expect(p!.floor!.x).toBeCloseTo(2.3, 6);
    expect(p!.floor!.y).toBeCloseTo(2.8, 6);
    expect(p!.keypoints3d![11 * 3]).toBeCloseTo(2.4, 6);
    expect(p!.keypoints3d![12 * 3]).toBeCloseTo(2.2, 6);
    expect(p!.keypoints3d![2]).toBeCloseTo(1.2, 6);
  });

  it('reads rows of a batch from start, and gives the frame the highest fall probability of its persons', () => {
    const out = outputs([0.1, 0.9, 0.8, 0.3], { fall: Float32Array.of(0.99, 0.2, 0.7, 0.95) });
    // The map's candidates are rows 1..3: persons rows 1, 2 (0.9, 0.8); row 3 (0.3) is not a person, its fall does not count.
    const r = new RefinerDecoder().decode(out, 1, 3, positions(3), opts);
    expect(r.persons.map((p) => p.slot)).toEqual([0, 1]);
    expect(r.fallProbability).toBeCloseTo(0.7, 6);
    expect(() => new RefinerDecoder().decode(out, 2, 3, positions(3), opts)).toThrow(RangeError);
  });

  it('reports the most probable activity with its probabilities', () => {
    const activity = Float32Array.of(0.1, 0.1, 0.6, 0.1, 0.1);
    const [p] = new RefinerDecoder().decode(outputs([0.9], { activity }), 0, 1, positions(1), opts).persons;
    expect(p!.modelActivity!.activity).toBe('lying');
    expect(Array.from(p!.modelActivity!.probabilities)).toEqual(Array.from(activity));
  });
});
