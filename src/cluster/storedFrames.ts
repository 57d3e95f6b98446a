/**
 * Which pose frames a store node has written lately, per environment, by time (whole
 * milliseconds, as the store keeps them): a frame the stream delivers again is dropped exactly,
 * while one delivered late, after newer ones (a read cut short by a lost NATS node, its frames
 * delivered again once their acknowledgement wait ends), is still written.
 *
 * Each environment remembers its newest {@link STORED_FRAMES_KEPT} times. A frame older than all
 * of those is taken as written: the stream delivers again only what was not acknowledged, within
 * seconds (`ack_wait`), and a restarted node resumes at its first unacknowledged frame.
 */

/** Times remembered per environment: minutes of frames, where redeliveries come within seconds. */
export const STORED_FRAMES_KEPT = 2048;

interface Kept {
  readonly times: Set<number>;
  /** Times in the order they were added (a ring), to forget the oldest. */
  readonly ring: Float64Array;
  next: number;
  /** Every time at or below this was written (forgotten, or before what the store held at start). */
  floor: number;
}

export class StoredFrames {
  private readonly envs = new Map<string, Kept>();

  /**
   * @param kept times remembered per environment
   * @param olderSeen whether a time older than all remembered counts as seen (a store node: the
   *   stream redelivers only lately taken frames); false where an older time may be new (an api
   *   node's live feed, whose room's source may start again from an earlier time)
   */
  constructor(
    private readonly kept = STORED_FRAMES_KEPT,
    private readonly olderSeen = true,
  ) {}

  /**
   * Builds the record from what a store holds.
   * @param rows per environment, the times of its newest stored frames (epoch ms, any order)
   * @param complete false when `rows` may leave older frames out: those are then at or below
   *   each environment's oldest time given
   */
  static from(rows: Iterable<{ environment_id: string; ms: number }>, complete: boolean, kept = STORED_FRAMES_KEPT): StoredFrames {
    const byEnv = new Map<string, number[]>();
    for (const r of rows) {
      let list = byEnv.get(r.environment_id);
      if (!list) byEnv.set(r.environment_id, (list = []));
      list.push(Math.round(r.ms));
    }
    const out = new StoredFrames(kept);
    for (const [env, times] of byEnv) {
      times.sort((a, b) => a - b);
      const k = out.entry(env);
      if (!complete) k.floor = times[0]! - 1;
      for (const t of times) out.add(env, t);
    }
    return out;
  }

  private entry(env: string): Kept {
    let k = this.envs.get(env);
    if (!k) this.envs.set(env, (k = { times: new Set(), ring: new Float64Array(this.kept), next: 0, floor: -Infinity }));
    return k;
  }

  /** True when the frame of `env` at `time` was written (or is older than all remembered). */
  has(env: string, time: number): boolean {
    const k = this.envs.get(env);
    if (!k) return false;
    const t = Math.round(time);
    return t <= k.floor || k.times.has(t);
  }

  /** Records a frame as written; the oldest remembered is forgotten past the limit. */
  add(env: string, time: number): void {
    const k = this.entry(env);
    const t = Math.round(time);
    if (k.times.has(t)) return;
    const slot = k.next % this.kept;
    if (k.next >= this.kept) {
      const old = k.ring[slot]!;
      k.times.delete(old);
      if (this.olderSeen && old > k.floor) k.floor = old;
    }
    k.ring[slot] = t;
    k.next++;
    k.times.add(t);
  }
}
