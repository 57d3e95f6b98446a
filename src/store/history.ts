import type { PersonPose, PoseFrame } from '../pose/types.js';
import { blobToFloats } from './schema.js';
import type { Row, Store } from './store.js';
import { TRACKER_DEFAULTS } from '../pose/tracker.js';

/**
 * The reads of pose history: pages of stored frames and persons, the query with its
 * aggregations, and one track's record. Every read is SQL over the store with bound parameters;
 * pages follow the storage order (`seq`), so rows stored while a client pages come after the
 * pages it has read and nothing is skipped or repeated.
 */

/** A closed time range, epoch ms (inclusive). */
export interface TimeRange {
  from: number;
  to: number;
}

/** What history pages select. */
export interface HistoryFilter extends TimeRange {
  environmentId: string;
  personId?: number;
  trackId?: number;
  minConfidence: number;
}

/** A stored person as the renderers take it, with the frame it belongs to. */
export interface StoredPerson {
  time: number;
  frameId: number;
  environmentId: string;
  seq: number;
  person: PersonPose;
}

/** Far past and future for open ranges (DuckDB TIMESTAMP holds these). */
export const OPEN_FROM = Date.parse('1970-01-01T00:00:00Z');
export const OPEN_TO = Date.parse('9999-12-31T00:00:00Z');
/** Steps longer than this do not count as movement or time in a track's statistics (a lost track). */
const MAX_STEP_S = 2;

const num = (v: unknown): number => (typeof v === 'number' ? v : typeof v === 'bigint' ? Number(v) : NaN);
const time = (v: unknown): number => (v instanceof Date ? v.getTime() : NaN);
const opt = (v: unknown): number | undefined => (v === null || v === undefined ? undefined : num(v));

/** A `pose_persons` row as the renderers take it. */
function personOf(r: Row): PersonPose {
  const p: PersonPose = {
    slot: num(r.slot),
    confidence: num(r.confidence),
    keypoints: blobToFloats(r.keypoints as Uint8Array),
    bbox: Float32Array.of(num(r.bbox_x), num(r.bbox_y), num(r.bbox_w), num(r.bbox_h)),
  };
  const track = opt(r.track_id);
  if (track !== undefined) p.trackId = track;
  const age = opt(r.track_age);
  if (age !== undefined) p.trackAge = age;
  const fx = opt(r.floor_x);
  const fy = opt(r.floor_y);
  if (fx !== undefined && fy !== undefined) p.floor = { x: fx, y: fy };
  const vx = opt(r.velocity_x);
  const vy = opt(r.velocity_y);
  if (vx !== undefined && vy !== undefined) p.velocity = { x: vx, y: vy };
  if (typeof r.activity === 'string') p.activity = r.activity as PersonPose['activity'] & string;
  const ac = opt(r.activity_confidence);
  if (ac !== undefined) p.activityConfidence = ac;
  if (r.dense_pose instanceof Uint8Array) p.densePose = blobToFloats(r.dense_pose);
  return p;
}

const PERSON_COLUMNS = `p.ts, p.environment_id, p.frame_id, p.seq, p.slot, p.person_id, p.track_id, p.track_age, p.confidence,
  p.bbox_x, p.bbox_y, p.bbox_w, p.bbox_h, p.floor_x, p.floor_y, p.velocity_x, p.velocity_y, p.activity, p.activity_confidence, p.keypoints`;

/** The person filters of a history read, as SQL over `pose_persons p` (parameters $env, $from, $to, $pid, $tid, $conf). */
const PERSON_WHERE = `p.environment_id = $env AND p.ts BETWEEN $from AND $to
  AND ($pid IS NULL OR p.person_id = $pid) AND ($tid IS NULL OR p.track_id = $tid) AND p.confidence >= $conf`;

function personParams(f: HistoryFilter): Record<string, number | string | Date | null> {
  return {
    env: f.environmentId,
    from: new Date(f.from),
    to: new Date(f.to),
    pid: f.personId ?? null,
    tid: f.trackId ?? null,
    conf: f.minConfidence,
  };
}

/** Ranges of `seq` a filter's rows are first counted by (history page index). */
const INDEX_RANGES = 4096;
/** Ranges an index may grow to by rows counted since it was made; beyond, it is made again. */
const INDEX_MAX_RANGES = 2 * INDEX_RANGES;
/** Filters whose index a store keeps, the least recently read dropped first. */
const INDEXES_KEPT = 32;

/**
 * A filter's matching persons counted by ranges of `seq` (ascending, disjoint), up to the store's
 * pose mark `seq` of when they were counted: a page is found from these counts, reading only the
 * ranges it lies in, instead of counting every row before it again. Never changed once made: rows
 * stored since are counted into a new index that adds one range.
 */
interface PageIndex {
  /** The store's `poseMark().writes` it was counted at: any other value voids it. */
  readonly writes: number;
  /** Rows with `seq` up to this are counted. */
  readonly seq: number;
  /** Each range's first and last `seq`. */
  readonly first: readonly number[];
  readonly last: readonly number[];
  /** Matching rows in the ranges up to each one, itself included. */
  readonly upTo: readonly number[];
}

/** Each store's page indexes by filter (Map order: least recently read first). */
const INDEXES = new WeakMap<Store, Map<string, PageIndex>>();

const filterKey = (f: HistoryFilter): string => [f.environmentId, f.from, f.to, f.personId ?? '', f.trackId ?? '', f.minConfidence].join('\u0000');

/**
 * The page index of a filter, as of now: the one kept, with the rows stored since counted; made
 * by one pass over the filter's rows when none is kept or the store's rows changed otherwise than
 * by appends in storage order. Undefined for a store that cannot tell (in memory) or when its rows
 * changed meanwhile.
 */
async function pageIndex(store: Store, f: HistoryFilter): Promise<PageIndex | undefined> {
  const mark = store.poseMark();
  if (!mark) return undefined;
  let kept = INDEXES.get(store);
  if (!kept) INDEXES.set(store, (kept = new Map()));
  const key = filterKey(f);
  const old = kept.get(key);
  const params = personParams(f);
  let index: PageIndex;
  if (old && old.writes === mark.writes && old.upTo.length < INDEX_MAX_RANGES) {
    index = old;
    if (mark.seq > old.seq) {
      const [c] = await store.query(`SELECT count(*) AS n FROM pose_persons p WHERE ${PERSON_WHERE} AND p.seq > $after AND p.seq <= $through`, {
        ...params,
        after: old.seq,
        through: mark.seq,
      });
      const n = num(c?.n);
      const total = old.upTo.at(-1) ?? 0;
      index =
        n > 0
          ? { writes: old.writes, seq: mark.seq, first: [...old.first, old.seq + 1], last: [...old.last, mark.seq], upTo: [...old.upTo, total + n] }
          : { ...old, seq: mark.seq };
    }
  } else {
    // The span of `seq` of the time range (zonemaps of `ts` and `seq` answer it), cut in ranges
    // of equal width, and the filter's rows counted by range in one pass.
    const [span] = await store.query(`SELECT min(p.seq) AS lo, max(p.seq) AS hi FROM pose_persons p WHERE p.ts BETWEEN $from AND $to AND p.seq <= $through`, {
      from: params.from!,
      to: params.to!,
      through: mark.seq,
    });
    const lo = opt(span?.lo);
    const hi = opt(span?.hi);
    const first: number[] = [];
    const last: number[] = [];
    const upTo: number[] = [];
    if (lo !== undefined && hi !== undefined) {
      const width = Math.max(1, Math.ceil((hi - lo + 1) / INDEX_RANGES));
      const counts = await store.query(
        `SELECT (p.seq - $lo) // $width AS r, count(*) AS n FROM pose_persons p WHERE ${PERSON_WHERE} AND p.seq BETWEEN $lo AND $hi GROUP BY r ORDER BY r`,
        { ...params, lo, hi, width },
      );
      let total = 0;
      for (const c of counts) {
        const r = num(c.r);
        total += num(c.n);
        first.push(lo + r * width);
        last.push(Math.min(hi, lo + (r + 1) * width - 1));
        upTo.push(total);
      }
    }
    index = { writes: mark.writes, seq: mark.seq, first, last, upTo };
  }
  // Rows deleted or stored out of order while it was counted: not kept, not used.
  if (store.poseMark()?.writes !== index.writes) {
    kept.delete(key);
    return undefined;
  }
  kept.delete(key);
  kept.set(key, index);
  for (const k of kept.keys()) {
    if (kept.size <= INDEXES_KEPT) break;
    kept.delete(k);
  }
  return index;
}

/** The first position in `upTo` (ascending) whose value exceeds `n`. */
function rangeAbove(upTo: readonly number[], n: number): number {
  let lo = 0;
  let hi = upTo.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (upTo[mid]! > n) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/**
 * One page of stored persons (Form B history records), in key order (`seq`, `slot`).
 *
 * A store on a file keeps, per filter read, its rows counted by ranges of `seq` (a page index,
 * made by one pass over the filter's rows and brought up to date with the rows stored since at
 * each read): the page is read from the ranges it lies in, sorted there, and the total is the
 * index's. A page of a filter read before costs a read of a few ranges; the first costs one pass.
 * When the rows changed while the page was read, or the store cannot tell its changes (in
 * memory: views over lake files), the page is found as {@link personPageByPosition} finds it.
 * @param store the store
 * @param f the filter
 * @param offset rows to skip
 * @param limit rows to return
 * @returns the persons and the total that matches
 */
export async function personPage(store: Store, f: HistoryFilter, offset: number, limit: number): Promise<{ total: number; persons: StoredPerson[] }> {
  const index = await pageIndex(store, f);
  if (!index) return personPageByPosition(store, f, offset, limit);
  const total = index.upTo.at(-1) ?? 0;
  if (offset >= total || limit <= 0) return { total, persons: [] };
  const end = Math.min(offset + limit, total);
  const i = rangeAbove(index.upTo, offset);
  const j = rangeAbove(index.upTo, end - 1);
  // Rows i to j hold the page; read from the row before it when that lies in range i, to see
  // whether the page's first key repeats there (never for the sink's rows): a page then starts at
  // the first row of its key, as personPageSorted reads it.
  const skip = offset - (i > 0 ? index.upTo[i - 1]! : 0);
  const before = skip > 0 ? 1 : 0;
  const rows = await store.query(
    `SELECT ${PERSON_COLUMNS} FROM pose_persons p WHERE ${PERSON_WHERE} AND p.seq BETWEEN $lo AND $hi ORDER BY p.seq, p.slot LIMIT $limit OFFSET $skip`,
    { ...personParams(f), lo: index.first[i]!, hi: index.last[j]!, limit: end - offset + before, skip: skip - before },
  );
  const repeats = before === 1 && rows.length > 1 && num(rows[0]!.seq) === num(rows[1]!.seq) && num(rows[0]!.slot) === num(rows[1]!.slot);
  if (!repeats && rows.length === end - offset + before && store.poseMark()?.writes === index.writes) {
    return { total, persons: rows.slice(before).map(stored) };
  }
  if (repeats) return personPageSorted(store, f, offset, limit);
  // The rows changed under the index: forget it, and read the page without one.
  INDEXES.get(store)?.delete(filterKey(f));
  return personPageByPosition(store, f, offset, limit);
}

/**
 * One page of stored persons (Form B history records), in key order, without an index.
 *
 * The rows are stored in the order of their key (`seq`, `slot`) as the sink appends them, so the
 * page is first read where it lies in the table, by position (the scan stops at the page instead
 * of sorting every row before it), and then proven to be the page of the key order: no row
 * before it has a key after its first, and exactly its rows lie between its first and last keys.
 * Those counts are ranges of `seq` the zonemaps prune, and they give the total too. When the
 * proof fails (rows stored out of key order, say a clock set back, or keys repeated), the page is
 * found by sorting the keys, as before; the answer is the same either way.
 * @param store the store
 * @param f the filter
 * @param offset rows to skip
 * @param limit rows to return
 * @returns the persons and the total that matches
 */
export async function personPageByPosition(store: Store, f: HistoryFilter, offset: number, limit: number): Promise<{ total: number; persons: StoredPerson[] }> {
  const params = personParams(f);
  const keys = await store.query(`SELECT p.seq, p.slot FROM pose_persons p WHERE ${PERSON_WHERE} LIMIT $limit OFFSET $offset`, { ...params, limit, offset });
  if (keys.length === 0) {
    // Fewer matching rows than the offset, in any order: only the total is wanted.
    const [count] = await store.query<{ n: number }>(`SELECT count(*) AS n FROM pose_persons p WHERE ${PERSON_WHERE}`, params);
    return { total: num(count?.n), persons: [] };
  }
  const page = keyRange(keys);
  if (page) {
    // Rows before the first key and after the last one; ties on seq counted by slot.
    const [c] = await store.query(
      `SELECT (SELECT count(*) FROM pose_persons p WHERE ${PERSON_WHERE} AND p.seq < $s0)
            + (SELECT count(*) FROM pose_persons p WHERE ${PERSON_WHERE} AND p.seq = $s0 AND p.slot < $l0) AS before,
              (SELECT count(*) FROM pose_persons p WHERE ${PERSON_WHERE} AND p.seq > $s1)
            + (SELECT count(*) FROM pose_persons p WHERE ${PERSON_WHERE} AND p.seq = $s1 AND p.slot > $l1) AS after`,
      { ...params, ...page },
    );
    const before = num(c?.before);
    const after = num(c?.after);
    // A short page is the last one: nothing may follow it.
    if (before === offset && (keys.length === limit || after === 0)) {
      const rows = await store.query(
        `SELECT ${PERSON_COLUMNS} FROM pose_persons p WHERE ${PERSON_WHERE} AND p.seq BETWEEN $s0 AND $s1
           AND (p.seq > $s0 OR p.slot >= $l0) AND (p.seq < $s1 OR p.slot <= $l1) ORDER BY p.seq, p.slot`,
        { ...params, ...page },
      );
      // Exactly the rows read by position lie between the two keys: they are the page.
      if (rows.length === keys.length) return { total: before + rows.length + after, persons: rows.map(stored) };
    }
  }
  return personPageSorted(store, f, offset, limit);
}

/**
 * The first and last keys of rows read by position, when their keys strictly increase (distinct
 * rows in key order); undefined otherwise.
 */
function keyRange(keys: readonly Row[]): { s0: number; l0: number; s1: number; l1: number } | undefined {
  let seq = -Infinity;
  let slot = 0;
  for (const k of keys) {
    const s = k.seq;
    const l = k.slot;
    if ((typeof s !== 'number' && typeof s !== 'bigint') || typeof l !== 'number') return undefined;
    const n = Number(s);
    if (!Number.isSafeInteger(n) || n < seq || (n === seq && l <= slot)) return undefined;
    seq = n;
    slot = l;
  }
  return { s0: num(keys[0]!.seq), l0: num(keys[0]!.slot), s1: seq, l1: slot };
}

/** `personPage` by sorting the keys of every matching row up to the page. */
async function personPageSorted(store: Store, f: HistoryFilter, offset: number, limit: number): Promise<{ total: number; persons: StoredPerson[] }> {
  const params = personParams(f);
  const [count] = await store.query<{ n: number }>(`SELECT count(*) AS n FROM pose_persons p WHERE ${PERSON_WHERE}`, params);
  // The page's first row by its order key alone (sorting two integers, not whole rows with their
  // keypoint BLOBs: 32 ms instead of 360-900 ms at 2 M rows deep), then the page from there,
  // which the zonemaps of `seq` prune to a few row groups.
  const [first] = await store.query(`SELECT p.seq, p.slot FROM pose_persons p WHERE ${PERSON_WHERE} ORDER BY p.seq, p.slot LIMIT 1 OFFSET $offset`, {
    ...params,
    offset,
  });
  if (!first) return { total: num(count?.n), persons: [] };
  const rows = await store.query(
    `SELECT ${PERSON_COLUMNS} FROM pose_persons p WHERE ${PERSON_WHERE} AND (p.seq > $seq OR (p.seq = $seq AND p.slot >= $slot))
     ORDER BY p.seq, p.slot LIMIT $limit`,
    { ...params, seq: num(first.seq), slot: num(first.slot), limit },
  );
  return { total: num(count?.n), persons: rows.map(stored) };
}

function stored(r: Row): StoredPerson {
  return { time: time(r.ts), frameId: num(r.frame_id), environmentId: String(r.environment_id), seq: num(r.seq), person: personOf(r) };
}

/** A stored frame with the persons that passed the filter. */
export interface StoredFrame {
  seq: number;
  frame: PoseFrame;
}

/**
 * One page of stored frames (Form A history), in storage order after `afterSeq`, each with its
 * persons that pass the filter. With a person or track filter only frames holding such a person
 * are listed; without, every frame of the range (an empty room is history too).
 * @param store the store
 * @param f the filter
 * @param afterSeq the cursor: frames stored after this one (0 from the start)
 * @param limit frames to return
 * @returns the frames, whether more follow, and the total that matches
 */
export async function framePage(
  store: Store,
  f: HistoryFilter,
  afterSeq: number,
  limit: number,
): Promise<{ total: number; frames: StoredFrame[]; hasMore: boolean }> {
  const params = personParams(f);
  const byPerson = f.personId !== undefined || f.trackId !== undefined;
  // Frames of the range, or only those holding a matching person.
  const FRAMES = byPerson
    ? `SELECT * FROM pose_frames fr WHERE fr.environment_id = $env AND fr.ts BETWEEN $from AND $to
         AND fr.seq IN (SELECT p.seq FROM pose_persons p WHERE ${PERSON_WHERE})`
    : `SELECT * FROM pose_frames fr WHERE fr.environment_id = $env AND fr.ts BETWEEN $from AND $to`;
  const [count] = await store.query<{ n: number }>(
    `SELECT count(*) AS n FROM (${FRAMES})`,
    byPerson ? params : { env: params.env!, from: params.from!, to: params.to! },
  );
  const frames = await store.query(
    `SELECT * FROM (${FRAMES}) WHERE seq > $after ORDER BY seq LIMIT $limit`,
    byPerson ? { ...params, after: afterSeq, limit: limit + 1 } : { env: params.env!, from: params.from!, to: params.to!, after: afterSeq, limit: limit + 1 },
  );
  const hasMore = frames.length > limit;
  const page = frames.slice(0, limit);
  const out: StoredFrame[] = page.map((r) => ({
    seq: num(r.seq),
    frame: {
      frameId: num(r.frame_id),
      time: time(r.ts),
      sourceId: String(r.source_id),
      environmentId: String(r.environment_id),
      persons: [],
      processingMs: num(r.processing_ms),
      modelVersion: String(r.model_version ?? ''),
      csiQuality: num(r.csi_quality),
    },
  }));
  if (out.length > 0) {
    const persons = await store.query(
      `SELECT ${PERSON_COLUMNS} FROM pose_persons p WHERE ${PERSON_WHERE} AND p.seq BETWEEN $lo AND $hi ORDER BY p.seq, p.slot`,
      { ...params, lo: out[0]!.seq, hi: out[out.length - 1]!.seq },
    );
    const bySeq = new Map(out.map((x) => [x.seq, x.frame]));
    for (const r of persons) bySeq.get(num(r.seq))?.persons.push(personOf(r));
  }
  return { total: num(count?.n), frames: out, hasMore };
}

/**
 * The time span of an environment's stored frames (for a 404's `available_range`).
 * @returns epoch ms, or null when nothing is stored
 */
export async function availableRange(store: Store, environmentId: string): Promise<TimeRange | null> {
  const [r] = await store.query(`SELECT min(ts) AS lo, max(ts) AS hi FROM pose_frames WHERE environment_id = ?`, [environmentId]);
  const lo = time(r?.lo);
  const hi = time(r?.hi);
  return Number.isFinite(lo) && Number.isFinite(hi) ? { from: lo, to: hi } : null;
}

// ---- the pose query ---------------------------------------------------------------------------

export type AggregationType = 'none' | 'minute_summary' | 'hourly_summary' | 'daily_summary';
export const AGGREGATION_TYPES: readonly AggregationType[] = ['none', 'minute_summary', 'hourly_summary', 'daily_summary'];
export type QueryMetric = 'person_count' | 'avg_confidence' | 'max_confidence' | 'activities';
export const QUERY_METRICS: readonly QueryMetric[] = ['person_count', 'avg_confidence', 'max_confidence', 'activities'];

const BUCKET: Record<Exclude<AggregationType, 'none'>, string> = {
  minute_summary: '1 minute',
  hourly_summary: '1 hour',
  daily_summary: '1 day',
};

/** `POST /pose/query` after validation. */
export interface PoseQuery extends TimeRange {
  environmentId: string;
  personCountMin?: number;
  personCountMax?: number;
  minConfidence: number;
  /** Only persons doing these (and frames holding one); all when absent. */
  activities?: readonly string[];
  aggregation: AggregationType;
  /** Most result rows (raw frames or buckets). */
  limit: number;
}

/** One result row: a frame (`none`) or a time bucket. */
export interface QueryRow {
  time: number;
  frames: number;
  /** Persons per frame (mean over the bucket's frames). */
  personCount: number;
  avgConfidence: number | null;
  maxConfidence: number | null;
  /** Share of the persons (rows) in each activity. */
  activities: Record<string, number>;
  frameId?: number;
}

export interface QueryAnswer {
  rows: QueryRow[];
  /** Rows of pose_frames and pose_persons in the time range: what the query had to read. */
  scanned: number;
  truncated: boolean;
  executionMs: number;
}

/**
 * `POST /pose/query`: frames in a time range filtered by person count, person confidence and
 * activity, raw or summarised per minute, hour or day. A frame passes when its stored person
 * count is in [min, max] and, with an activity filter, it holds a person doing one of them; the
 * persons counted in confidences and activity shares are those at or above the confidence floor
 * (and, with the filter, doing one of the activities).
 * @param store the store
 * @param q the validated query
 * @returns result rows oldest first, the rows scanned, whether `limit` cut them, the time taken
 */
export async function poseQuery(store: Store, q: PoseQuery): Promise<QueryAnswer> {
  const t0 = performance.now();
  const params = {
    env: q.environmentId,
    from: new Date(q.from),
    to: new Date(q.to),
    pmin: q.personCountMin ?? null,
    pmax: q.personCountMax ?? null,
    conf: q.minConfidence,
    acts: q.activities ? JSON.stringify(q.activities) : null,
    limit: q.limit + 1,
  };
  const bucket = q.aggregation === 'none' ? null : BUCKET[q.aggregation];
  // One row per passing frame with its passing persons' figures, then raw or per bucket. The
  // bucket is one of three constant literals; every value is bound.
  const FRAMES = `WITH fr AS (
       SELECT ts, seq, frame_id, person_count FROM pose_frames
       WHERE environment_id = $env AND ts BETWEEN $from AND $to
         AND ($pmin IS NULL OR person_count >= $pmin) AND ($pmax IS NULL OR person_count <= $pmax)
     ), pf AS (
       SELECT seq, count(*) AS n, sum(confidence) AS conf_sum, max(confidence) AS conf_max,
         list(activity) FILTER (WHERE activity IS NOT NULL) AS acts
       FROM pose_persons
       WHERE environment_id = $env AND ts BETWEEN $from AND $to AND confidence >= $conf
         AND ($acts IS NULL OR list_contains(from_json($acts, '["VARCHAR"]'), activity))
       GROUP BY seq
     ), f AS (
       SELECT fr.*, coalesce(pf.n, 0) AS n, pf.conf_sum, pf.conf_max, coalesce(pf.acts, []) AS acts
       FROM fr LEFT JOIN pf USING (seq) WHERE $acts IS NULL OR pf.seq IS NOT NULL
     )`;
  const rows = await store.query(
    bucket
      ? `${FRAMES}
         SELECT time_bucket(INTERVAL '${bucket}', ts) AS t, count(*) AS frames, avg(person_count) AS person_count,
           sum(conf_sum) / nullif(sum(n), 0) AS avg_conf, max(conf_max) AS max_conf, flatten(list(acts)) AS acts
         FROM f GROUP BY 1 ORDER BY 1 LIMIT $limit`
      : `${FRAMES}
         SELECT ts AS t, frame_id, 1 AS frames, person_count, conf_sum / nullif(n, 0) AS avg_conf, conf_max AS max_conf, acts
         FROM f ORDER BY seq LIMIT $limit`,
    params,
  );
  const [scanned] = await store.query<{ n: number }>(
    `SELECT (SELECT count(*) FROM pose_frames WHERE environment_id = $env AND ts BETWEEN $from AND $to)
          + (SELECT count(*) FROM pose_persons WHERE environment_id = $env AND ts BETWEEN $from AND $to) AS n`,
    { env: params.env, from: params.from, to: params.to },
  );
  const truncated = rows.length > q.limit;
  const out: QueryRow[] = rows.slice(0, q.limit).map((r) => {
    const acts = (r.acts as string[] | null) ?? [];
    const activities: Record<string, number> = {};
    for (const a of acts) activities[a] = (activities[a] ?? 0) + 1;
    for (const a of Object.keys(activities)) activities[a] = activities[a]! / acts.length;
    const row: QueryRow = {
      time: time(r.t),
      frames: num(r.frames),
      personCount: num(r.person_count),
      avgConfidence: r.avg_conf === null ? null : num(r.avg_conf),
      maxConfidence: r.max_conf === null ? null : num(r.max_conf),
      activities,
    };
    if (!bucket) row.frameId = num(r.frame_id);
    return row;
  });
  return { rows: out, scanned: num(scanned?.n), truncated, executionMs: performance.now() - t0 };
}

// ---- one track --------------------------------------------------------------------------------

/** A track's record (spec "Track"), all figures from its stored persons. */
export interface TrackRecord {
  trackId: number;
  environmentId: string;
  firstSeen: number;
  lastSeen: number;
  frames: number;
  averageConfidence: number;
  /** Metres on the floor plan when floor positions were stored, else pixels of the view. */
  movementDistance: number;
  averageSpeed: number;
  timeStationary: number;
  timeMoving: number;
  distanceUnit: 'm' | 'px';
  lastActivity: string | null;
}

/**
 * One trajectory point: the box centre in pixels while the person was in the reference view, the
 * floor position in metres when known.
 */
export interface TrajectoryPoint {
  time: number;
  /**
   * Whether the person was in the reference view, by the rule of `inView` (src/render/frame.ts):
   * its stored box has an area. Out of view it was stored with the empty box, whose "centre"
   * (0, 0) is no place at all, so the centre is null.
   */
  inView: boolean;
  centerX: number | null;
  centerY: number | null;
  floorX: number | null;
  floorY: number | null;
  confidence: number;
}

/**
 * A track's record: first and last seen, frames, mean confidence, and its movement statistics
 * over steps between consecutive rows of at most 2 s. With floor positions stored, from the
 * tracker's smoothed speed (the stored velocity, which is 0 while the tracker holds the person
 * still: src/pose/tracker.ts), as the tracker's own statistics: distance = speed x step, moving
 * where the speed reaches the tracker's moving speed (0.2 m/s), stationary otherwise; the raw
 * floor positions would add the model's floor error up into metres (a row stored without a
 * velocity, never the tracker's, steps from its floor position). Else from box centres in pixels
 * (moving from 20 px/s).
 * @param store the store
 * @param environmentId the environment
 * @param trackId the track
 * @param range the time range to consider
 * @returns the record, or null when the track has no person in the range
 */
export async function trackRecord(store: Store, environmentId: string, trackId: number, range: TimeRange): Promise<TrackRecord | null> {
  const [r] = await store.query(
    `WITH p AS (
       SELECT ts, confidence, activity,
         floor_x, floor_y, bbox_x + bbox_w / 2 AS cx, bbox_y + bbox_h / 2 AS cy,
         sqrt(velocity_x::DOUBLE ** 2 + velocity_y::DOUBLE ** 2) AS v
       FROM pose_persons WHERE environment_id = $env AND track_id = $tid AND ts BETWEEN $from AND $to
     ), floor AS (SELECT count(*) = count(floor_x) AND count(*) > 0 AS has FROM p),
     steps AS (
       SELECT ts, epoch_ms(ts - lag(ts) OVER w) / 1000.0 AS dt,
         CASE WHEN (SELECT has FROM floor) THEN coalesce(v * epoch_ms(ts - lag(ts) OVER w) / 1000.0, sqrt((floor_x - lag(floor_x) OVER w) ** 2 + (floor_y - lag(floor_y) OVER w) ** 2))
              ELSE sqrt((cx - lag(cx) OVER w) ** 2 + (cy - lag(cy) OVER w) ** 2) END AS d
       FROM p WINDOW w AS (ORDER BY ts)
     )
     SELECT (SELECT min(ts) FROM p) AS first_seen, (SELECT max(ts) FROM p) AS last_seen, (SELECT count(*) FROM p) AS frames,
       (SELECT avg(confidence) FROM p) AS avg_conf, (SELECT arg_max(activity, ts) FROM p) AS last_activity,
       (SELECT has FROM floor) AS floor,
       coalesce(sum(d) FILTER (WHERE dt > 0 AND dt <= $maxstep), 0) AS distance,
       coalesce(sum(dt) FILTER (WHERE dt > 0 AND dt <= $maxstep AND d / dt >= CASE WHEN (SELECT has FROM floor) THEN $vfloor ELSE $vview END), 0) AS moving,
       coalesce(sum(dt) FILTER (WHERE dt > 0 AND dt <= $maxstep AND d / dt < CASE WHEN (SELECT has FROM floor) THEN $vfloor ELSE $vview END), 0) AS still
     FROM steps`,
    {
      env: environmentId,
      tid: trackId,
      from: new Date(range.from),
      to: new Date(range.to),
      maxstep: MAX_STEP_S,
      vfloor: TRACKER_DEFAULTS.movingSpeed.floor,
      vview: TRACKER_DEFAULTS.movingSpeed.view,
    },
  );
  if (!r || num(r.frames) === 0) return null;
  const first = time(r.first_seen);
  const last = time(r.last_seen);
  const distance = num(r.distance);
  const span = (last - first) / 1000;
  return {
    trackId,
    environmentId,
    firstSeen: first,
    lastSeen: last,
    frames: num(r.frames),
    averageConfidence: num(r.avg_conf),
    movementDistance: distance,
    averageSpeed: span > 0 ? distance / span : 0,
    timeStationary: num(r.still),
    timeMoving: num(r.moving),
    distanceUnit: r.floor === true ? 'm' : 'px',
    lastActivity: typeof r.last_activity === 'string' ? r.last_activity : null,
  };
}

/**
 * A track's trajectory, at most `max` points spread evenly over it (every point when fewer).
 * Points where the person was out of the reference view are kept (their floor position still
 * says where they were) without a box centre.
 * @returns the points oldest first and how many the track has in the range
 */
export async function trajectory(
  store: Store,
  environmentId: string,
  trackId: number,
  range: TimeRange,
  max: number,
): Promise<{ total: number; points: TrajectoryPoint[] }> {
  const rows = await store.query(
    `WITH p AS (
       SELECT ts, confidence, floor_x, floor_y, bbox_x + bbox_w / 2 AS cx, bbox_y + bbox_h / 2 AS cy,
         bbox_w > 0 AND bbox_h > 0 AND isfinite(bbox_x) AND isfinite(bbox_y) AND isfinite(bbox_w) AND isfinite(bbox_h) AS in_view,
         row_number() OVER (ORDER BY ts) - 1 AS i, count(*) OVER () AS n
       FROM pose_persons WHERE environment_id = $env AND track_id = $tid AND ts BETWEEN $from AND $to
     )
     SELECT * FROM p WHERE n <= $max OR i % ceil(n / $max)::BIGINT = 0 ORDER BY ts`,
    { env: environmentId, tid: trackId, from: new Date(range.from), to: new Date(range.to), max },
  );
  return {
    total: rows.length ? num(rows[0]!.n) : 0,
    points: rows.map((r) => ({
      time: time(r.ts),
      inView: r.in_view === true,
      centerX: r.in_view === true ? num(r.cx) : null,
      centerY: r.in_view === true ? num(r.cy) : null,
      floorX: r.floor_x === null ? null : num(r.floor_x),
      floorY: r.floor_y === null ? null : num(r.floor_y),
      confidence: num(r.confidence),
    })),
  };
}
