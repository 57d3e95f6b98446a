/**
 * What a store node takes as already written (src/cluster/storedFrames.ts): a frame delivered
 * again is dropped; one delivered late, after newer ones, is still written (a store that compared
 * with the newest time it wrote lost it: the 3-node cluster test caught one such frame after a
 * NATS node was killed).
 */
import { describe, expect, it } from 'vitest';
import { StoredFrames } from '../../src/cluster/storedFrames.js';

describe('the frames a store node wrote lately', () => {
  it('drops a frame delivered again and keeps one delivered late', () => {
    const s = new StoredFrames(8);
    for (const t of [100, 200, 300]) s.add('a', t);
    expect(s.has('a', 200)).toBe(true);
    // To the millisecond the store keeps.
    expect(s.has('a', 200.4)).toBe(true);
    // Older than the newest written, but never written: still to write.
    expect(s.has('a', 250)).toBe(false);
    // Rooms apart.
    expect(s.has('b', 200)).toBe(false);
  });

  it('takes frames older than everything remembered as written, once it forgets', () => {
    const s = new StoredFrames(4);
    for (const t of [10, 20, 30, 40]) s.add('a', t);
    expect(s.has('a', 5)).toBe(false);
    s.add('a', 50);
    // 10 was forgotten: at or below it counts as written.
    expect(s.has('a', 10)).toBe(true);
    expect(s.has('a', 5)).toBe(true);
    expect(s.has('a', 15)).toBe(false);
    expect(s.has('a', 50)).toBe(true);
  });

  it('forgets without taking older times as seen, for a live feed whose source may start again earlier', () => {
    const s = new StoredFrames(4, false);
    for (const t of [10, 20, 30, 40, 50]) s.add('a', t);
    expect(s.has('a', 50)).toBe(true);
    expect(s.has('a', 20)).toBe(true);
    // 10 was forgotten, and nothing older counts as seen.
    expect(s.has('a', 10)).toBe(false);
    expect(s.has('a', 5)).toBe(false);
  });

  it('starts from what the store holds: its newest frames, and everything before them', () => {
    const s = StoredFrames.from(
      [
        { environment_id: 'a', ms: 300 },
        { environment_id: 'a', ms: 100 },
        { environment_id: 'b', ms: 70 },
      ],
      false,
    );
    expect(s.has('a', 100)).toBe(true);
    expect(s.has('a', 300)).toBe(true);
    expect(s.has('a', 200)).toBe(false);
    // Before the newest given: stored (the query gave only the newest).
    expect(s.has('a', 50)).toBe(true);
    expect(s.has('b', 71)).toBe(false);
    const all = StoredFrames.from([{ environment_id: 'a', ms: 300 }], true);
    expect(all.has('a', 50)).toBe(false);
  });
});
