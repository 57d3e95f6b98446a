/**
 * Fall detection scores: true falls (the simulator's `fall_start` events) against what the
 * pipeline reported (fall alerts and `fall_detection` events of the alerts operator).
 *
 * - A detection is one fall episode of one track: the alerts operator raises a `high` alert when
 *   the person is still down after the notification delay and a `critical` one at 3x; a person who
 *   gets up before the delay gets a `fall_detection` event instead. All of these for the same
 *   track and the same fall onset (`metadata.fall_time`) are one detection, at the time of the
 *   first of them (`episodesFrom`).
 * - A detection is attributed to a true person by the caller (the person its track was paired
 *   with, see `bench/accuracy.ts`), or to none.
 * - A true fall of person P at time S is detected by a detection of person P at a time in
 *   [S, S + windowMs] (window = notification delay + 5 s in the benchmark). Detections are taken
 *   in time order; each goes to the most recent undetected eligible fall. A detection that finds
 *   no undetected eligible fall (wrong person, wrong time, or a second detection of a fall already
 *   detected) is a false alarm.
 * - precision = detected falls / detections, recall = detected falls / true falls, delay = mean of
 *   (detection time - fall start) over detected falls.
 */

/** A true fall. */
export interface TrueFall {
  /** The true person who fell. */
  personId: number;
  /** Fall start, epoch ms. */
  start: number;
}

/** One reported fall episode. */
export interface FallDetection {
  /** Epoch ms of its first alert or event. */
  time: number;
  trackId: number;
  /** The episode's onset (`metadata.fall_time`), epoch ms. */
  onset: number;
  /** True person the track stands for; null when it stands for nobody. */
  personId: number | null;
}

/** Outcome of fall scoring. */
export interface FallScores {
  falls: number;
  detections: number;
  /** Detected true falls (= true positive detections). */
  detected: number;
  /** Detections that detected nothing. */
  falseAlarms: number;
  /** detected / detections; NaN without detections. */
  precision: number;
  /** detected / falls; NaN without falls. */
  recall: number;
  /** Mean ms from fall start to its detection; NaN when none was detected. */
  meanDelayMs: number;
  /** Per true fall (input order): index of the detection that found it, or -1. */
  fallDetectedBy: number[];
  /** Per detection (input order): index of the fall it found, or -1 (a false alarm). */
  detectionFall: number[];
}

/**
 * Scores detections against true falls.
 * @param falls true falls
 * @param detections reported episodes, attributed to true persons
 * @param windowMs a fall counts as detected by a detection at most this long after its start
 * @returns counts, precision, recall, mean delay and the pairing
 * @example
 * scoreFalls([{ personId: 0, start: 1000 }], [{ time: 7000, trackId: 3, onset: 1500, personId: 0 }], 10_000)
 * // { detected: 1, precision: 1, recall: 1, meanDelayMs: 6000, ... }
 */
export function scoreFalls(falls: readonly TrueFall[], detections: readonly FallDetection[], windowMs: number): FallScores {
  if (!(windowMs >= 0)) throw new RangeError(`scoreFalls: window must be >= 0 ms, got ${windowMs}`);
  const fallDetectedBy = new Array<number>(falls.length).fill(-1);
  const detectionFall = new Array<number>(detections.length).fill(-1);
  const order = detections.map((_, i) => i).sort((a, b) => detections[a]!.time - detections[b]!.time || a - b);
  let delaySum = 0;
  let detected = 0;
  for (const d of order) {
    const det = detections[d]!;
    if (det.personId === null) continue;
    let best = -1;
    for (let f = 0; f < falls.length; f++) {
      const tf = falls[f]!;
      if (fallDetectedBy[f] >= 0 || tf.personId !== det.personId) continue;
      if (!(det.time >= tf.start && det.time <= tf.start + windowMs)) continue;
      if (best < 0 || tf.start > falls[best]!.start) best = f;
    }
    if (best < 0) continue;
    fallDetectedBy[best] = d;
    detectionFall[d] = best;
    delaySum += det.time - falls[best]!.start;
    detected++;
  }
  return {
    falls: falls.length,
    detections: detections.length,
    detected,
    falseAlarms: detections.length - detected,
    precision: detections.length > 0 ? detected / detections.length : NaN,
    recall: falls.length > 0 ? detected / falls.length : NaN,
    meanDelayMs: detected > 0 ? delaySum / detected : NaN,
    fallDetectedBy,
    detectionFall,
  };
}

/** The parts of an alert or event that `episodesFrom` reads (PoseAlert and ActivityEvent fit). */
export interface FallNotice {
  type: string;
  time: number;
  trackId: number;
  metadata: Record<string, unknown>;
  /** The true person the track stood for when the notice was raised, if the caller knows it. */
  personId?: number | null;
}

/**
 * Folds fall alerts and `fall_detection` events into one episode per (track, onset), at the time
 * of the first notice. Other types (inactivity, intrusion, recoveries, activity changes) are
 * ignored; a notice without a numeric `metadata.fall_time` is its own onset. An episode takes the
 * `personId` of its first notice (null when that has none).
 * @param notices alerts and events in any order
 * @returns episodes, ordered by time
 */
export function episodesFrom(notices: readonly FallNotice[]): FallDetection[] {
  const byKey = new Map<string, FallDetection>();
  for (const n of notices) {
    if (n.type !== 'fall_detection') continue;
    const ft = n.metadata['fall_time'];
    const onset = typeof ft === 'number' && Number.isFinite(ft) ? ft : n.time;
    const key = `${n.trackId}@${onset}`;
    const seen = byKey.get(key);
    const personId = n.personId ?? null;
    if (!seen) byKey.set(key, { time: n.time, trackId: n.trackId, onset, personId });
    else if (n.time < seen.time) {
      seen.time = n.time;
      seen.personId = personId;
    }
  }
  return [...byKey.values()].sort((a, b) => a.time - b.time || a.trackId - b.trackId);
}
