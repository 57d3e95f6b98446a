/**
 * The DuckDB schema of the pose store and its migrations.
 *
 * Layout choices, made for the history and analytics reads that come later:
 * - Every time table leads with `ts TIMESTAMP` (UTC, written at millisecond precision). Rows are
 *   appended in arrival order, which is time order per environment, so DuckDB's per-row-group
 *   min/max zonemaps prune a `ts BETWEEN ? AND ?` scan to the row groups of that range. No ART
 *   indexes: they do not serve range scans, slow the appender several-fold and must fit in memory.
 * - `pose_frames` holds one row per estimate with the figures the summaries and occupancy series
 *   aggregate (`person_count`, `avg_confidence`, `max_confidence`), so those reads never touch the
 *   wide `pose_persons` table.
 * - `pose_persons` repeats `ts` and `environment_id` from its frame, so a history page is two
 *   range scans joined on (`environment_id`, `ts`, `frame_id`); a frame id alone is not unique
 *   across restarts.
 * - Keypoints (17 x (x, y, confidence)) and dense pose (24 x (confidence, u, v)) are float32
 *   little-endian BLOBs, one per person: one value per row for the appender instead of 51 or 72.
 *   `keypoints` is stored uncompressed: on float bytes DuckDB's dictionary and FSST compression
 *   save under 1 % (0.6 % of the keypoint bytes on the bench day, where FSST won most segments),
 *   while trying them at every checkpoint cost about a fifth of the CPU of storing a person row
 *   and FSST costs again at every read. (DuckDB cannot change a column's compression in place: a
 *   file made by an earlier build keeps the automatic choice, the same values, slower checkpoints.)
 * - Event and alert `metadata` is JSON; their action lists are `VARCHAR[]` (few rows, so the slow
 *   LIST append path does not matter there).
 */

/** The schema version this build writes. A file with a newer version is refused at open. */
export const SCHEMA_VERSION = 3;

/** One schema step: the statements that bring version `version - 1` to `version`. */
export interface Migration {
  version: number;
  description: string;
  statements: readonly string[];
}

/** Floats per person in the `keypoints` BLOB (17 keypoints x (x, y, confidence)). */
export const KEYPOINT_FLOATS = 51;
/** Floats per person in the `dense_pose` BLOB (24 parts x (confidence, u, v)). */
export const DENSE_POSE_FLOATS = 72;

/** Tables with a `ts` column, pruned by retention. */
export const TIME_TABLES = ['pose_frames', 'pose_persons', 'activity_events', 'alerts', 'system_metrics'] as const;
/** One of `TIME_TABLES`. */
export type TimeTable = (typeof TIME_TABLES)[number];

const V1: readonly string[] = [
  `CREATE TABLE IF NOT EXISTS schema_version (
    version INTEGER NOT NULL,
    description VARCHAR NOT NULL,
    applied_at TIMESTAMP NOT NULL DEFAULT current_timestamp
  )`,
  // Column order is the appender's order: keep POSE_FRAME_COLUMNS below in step.
  `CREATE TABLE IF NOT EXISTS pose_frames (
    ts TIMESTAMP NOT NULL,
    environment_id VARCHAR NOT NULL,
    source_id VARCHAR NOT NULL,
    frame_id BIGINT NOT NULL,
    person_count INTEGER NOT NULL,
    processing_ms FLOAT,
    model_version VARCHAR,
    csi_quality FLOAT,
    avg_confidence FLOAT,
    max_confidence FLOAT
  )`,
  `CREATE TABLE IF NOT EXISTS pose_persons (
    ts TIMESTAMP NOT NULL,
    environment_id VARCHAR NOT NULL,
    frame_id BIGINT NOT NULL,
    slot INTEGER NOT NULL,
    person_id INTEGER NOT NULL,
    track_id INTEGER,
    track_age INTEGER,
    confidence FLOAT NOT NULL,
    bbox_x FLOAT NOT NULL,
    bbox_y FLOAT NOT NULL,
    bbox_w FLOAT NOT NULL,
    bbox_h FLOAT NOT NULL,
    floor_x FLOAT,
    floor_y FLOAT,
    velocity_x FLOAT,
    velocity_y FLOAT,
    activity VARCHAR,
    activity_confidence FLOAT,
    keypoints BLOB NOT NULL USING COMPRESSION uncompressed,
    dense_pose BLOB
  )`,
  `CREATE TABLE IF NOT EXISTS activity_events (
    ts TIMESTAMP NOT NULL,
    event_id VARCHAR NOT NULL,
    type VARCHAR NOT NULL,
    severity VARCHAR NOT NULL,
    environment_id VARCHAR NOT NULL,
    person_id INTEGER,
    track_id INTEGER,
    confidence DOUBLE,
    location_x DOUBLE,
    location_y DOUBLE,
    metadata JSON,
    actions_taken VARCHAR[]
  )`,
  `CREATE TABLE IF NOT EXISTS alerts (
    ts TIMESTAMP NOT NULL,
    alert_id VARCHAR NOT NULL,
    type VARCHAR NOT NULL,
    severity VARCHAR NOT NULL,
    environment_id VARCHAR NOT NULL,
    person_id INTEGER,
    track_id INTEGER,
    confidence DOUBLE,
    location_x DOUBLE,
    location_y DOUBLE,
    zone VARCHAR,
    metadata JSON,
    actions_required VARCHAR[]
  )`,
  `CREATE TABLE IF NOT EXISTS system_metrics (
    ts TIMESTAMP NOT NULL,
    frames_per_second DOUBLE,
    average_latency_ms DOUBLE,
    cpu_usage DOUBLE,
    memory_usage DOUBLE,
    processing_queue_size INTEGER,
    error_rate DOUBLE,
    active_persons INTEGER
  )`,
];

/**
 * Version 2: `seq`, the order rows were stored in, on frames and their persons (the persons of a
 * frame share its seq); history pages by it, so frames stored while a client pages come after the
 * pages it has read and nothing is skipped or repeated. Rows of version 1 get their time in
 * microseconds. And `tracks`, one row per track computed from its persons.
 */
const V2: readonly string[] = [
  `ALTER TABLE pose_frames ADD COLUMN seq BIGINT`,
  `UPDATE pose_frames SET seq = epoch_us(ts)`,
  `ALTER TABLE pose_persons ADD COLUMN seq BIGINT`,
  `UPDATE pose_persons SET seq = epoch_us(ts)`,
  `CREATE OR REPLACE VIEW tracks AS
    SELECT environment_id, track_id,
      min(ts) AS first_seen, max(ts) AS last_seen, count(*) AS frames,
      avg(confidence) AS average_confidence, max(track_age) AS max_track_age,
      arg_max(activity, ts) AS last_activity,
      arg_max(floor_x, ts) AS last_floor_x, arg_max(floor_y, ts) AS last_floor_y
    FROM pose_persons WHERE track_id IS NOT NULL GROUP BY environment_id, track_id`,
];

/**
 * Version 3: `system_metrics.error_count`, the errors the service logged since the previous
 * sample, so the summary's `error_count` of a period is their sum. Rows of earlier versions hold
 * NULL (nothing was counted then) and count as 0.
 */
const V3: readonly string[] = [`ALTER TABLE system_metrics ADD COLUMN error_count INTEGER`];

/** Every migration, oldest first; `MIGRATIONS[i].version === i + 1`. */
export const MIGRATIONS: readonly Migration[] = [
  { version: 1, description: 'pose store: frames, persons, events, alerts, metrics', statements: V1 },
  { version: 2, description: 'storage order (seq) on frames and persons; the tracks view', statements: V2 },
  { version: 3, description: 'errors logged per metrics sample (system_metrics.error_count)', statements: V3 },
];

/** Column order of `system_metrics`, as the metrics recorder appends it. */
export const SYSTEM_METRICS_COLUMNS = [
  'ts',
  'frames_per_second',
  'average_latency_ms',
  'cpu_usage',
  'memory_usage',
  'processing_queue_size',
  'error_rate',
  'active_persons',
  'error_count',
] as const;

/** Column order of `pose_frames`, as the sink appends it. */
export const POSE_FRAME_COLUMNS = [
  'ts',
  'environment_id',
  'source_id',
  'frame_id',
  'person_count',
  'processing_ms',
  'model_version',
  'csi_quality',
  'avg_confidence',
  'max_confidence',
  'seq',
] as const;

/** Column order of `pose_persons`, as the sink appends it. */
export const POSE_PERSON_COLUMNS = [
  'ts',
  'environment_id',
  'frame_id',
  'slot',
  'person_id',
  'track_id',
  'track_age',
  'confidence',
  'bbox_x',
  'bbox_y',
  'bbox_w',
  'bbox_h',
  'floor_x',
  'floor_y',
  'velocity_x',
  'velocity_y',
  'activity',
  'activity_confidence',
  'keypoints',
  'dense_pose',
  'seq',
] as const;

/** True on little-endian hosts, where a Float32Array's bytes already are the BLOB layout. */
export const HOST_LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/**
 * Packs floats as the float32 little-endian bytes the BLOB columns hold.
 * @param values e.g. a person's 51 keypoint floats
 * @returns a new byte array of `4 * values.length` bytes
 * @example floatsToBlob(person.keypoints) // 204 bytes
 */
export function floatsToBlob(values: ArrayLike<number>): Uint8Array {
  const out = new Uint8Array(values.length * 4);
  if (HOST_LITTLE_ENDIAN) {
    new Float32Array(out.buffer).set(values);
  } else {
    const dv = new DataView(out.buffer);
    for (let i = 0; i < values.length; i++) dv.setFloat32(i * 4, values[i]!, true);
  }
  return out;
}

/**
 * Reads a float32 little-endian BLOB (`keypoints`, `dense_pose`) back into floats. The bytes may
 * sit at any offset (DuckDB hands out views), so they are copied, not reinterpreted in place.
 * @param bytes the BLOB value
 * @returns `bytes.length / 4` floats (trailing bytes of a short final float are ignored)
 * @example blobToFloats(row.keypoints) // Float32Array(51)
 */
export function blobToFloats(bytes: Uint8Array): Float32Array {
  const n = bytes.length >> 2;
  const out = new Float32Array(n);
  if (HOST_LITTLE_ENDIAN) {
    new Uint8Array(out.buffer).set(bytes.subarray(0, n * 4));
  } else {
    const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    for (let i = 0; i < n; i++) out[i] = dv.getFloat32(i * 4, true);
  }
  return out;
}

/** What a migration runner needs from a connection: run one fixed SQL text, read one scalar. */
export interface MigrationTarget {
  run(sql: string): Promise<unknown>;
  /** First column of the first row, or undefined when there is no row. */
  scalar(sql: string): Promise<unknown>;
}

/** Why a file cannot be used with this build's schema. */
export class SchemaError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SchemaError';
  }
}

/**
 * Brings the database to `SCHEMA_VERSION`: creates every table in a fresh file, applies the
 * missing migrations of an older one (each in its own transaction), and refuses a file written
 * by a newer build or one that holds other tables but no `schema_version` (not a csipose store).
 * @param db the write connection, wrapped
 * @returns the version found before migrating (0 for a fresh file)
 * @example const from = await migrate(target); // 0 on first open, 1 afterwards
 */
export async function migrate(db: MigrationTarget): Promise<number> {
  const hasVersionTable = Number(await db.scalar(`SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'main' AND table_name = 'schema_version'`));
  let current = 0;
  if (hasVersionTable > 0) {
    const v = await db.scalar(`SELECT max(version) FROM schema_version`);
    current = v === null || v === undefined ? 0 : Number(v);
  } else {
    const others = Number(await db.scalar(`SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'main'`));
    if (others > 0) throw new SchemaError('the file holds tables but no schema_version table: it is not a csipose store');
  }
  if (current > SCHEMA_VERSION) {
    throw new SchemaError(`the file has schema version ${current}, newer than this build's ${SCHEMA_VERSION}`);
  }
  for (const m of MIGRATIONS) {
    if (m.version <= current) continue;
    await db.run('BEGIN TRANSACTION');
    try {
      for (const s of m.statements) await db.run(s);
      // Constants of our own, not input: no parameter needed.
      await db.run(`INSERT INTO schema_version (version, description) VALUES (${m.version}, '${m.description.replace(/'/g, "''")}')`);
      await db.run('COMMIT');
    } catch (e) {
      await db.run('ROLLBACK').catch(() => undefined);
      throw e;
    }
  }
  return current;
}
