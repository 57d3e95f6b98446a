import duckdb from '@duckdb/node-bindings';
import {
  DuckDBDataChunk,
  DuckDBTimestampValue,
  DuckDBTypeId,
  LIST,
  VARCHAR,
  type DuckDBAppender,
  type DuckDBConnection,
  type DuckDBType,
} from '@duckdb/node-api';
import { asyncScheduler, type SchedulerLike, type Subscription } from 'rxjs';
import type { ActivityEvent, PersonPose, PoseAlert, PoseFrame } from '../pose/types.js';
import { DENSE_POSE_FLOATS, HOST_LITTLE_ENDIAN, KEYPOINT_FLOATS, POSE_FRAME_COLUMNS, POSE_PERSON_COLUMNS } from './schema.js';
import { StoreError, type Store, type StoreWriteFailure } from './store.js';
import { CHUNK_ROWS, Utf8Cache, writeBlobs, writeFloat32, writeInt32, writeInt64, writeNullableInt32, writeTimestampMs, writeVarchar } from './vectorWrite.js';

/** Batch bounds, retry and error reporting of a PoseSink. */
export interface PoseSinkOptions {
  /** Buffered rows (frames + persons + events + alerts) that trigger a flush. Default 2,000. */
  maxRows?: number;
  /** Longest a row waits in the buffer before a flush starts. Default 250 ms. */
  maxDelayMs?: number;
  /**
   * Most rows held while DuckDB cannot take them (failed flushes are retried). A frame that would
   * go past it is refused, counted in `dropped` and reported. Default 100,000 (about 30 MB).
   */
  maxPendingRows?: number;
  /** Wait before the first retry of a failed flush; doubles per failure. Default 500 ms. */
  retryDelayMs?: number;
  /** Longest wait between retries. Default 10 s. */
  maxRetryDelayMs?: number;
  /** Receives every write failure and every refusal; the sink never throws them. */
  onError?: (error: StoreError) => void;
  /** Timers (flush delay, retry). Default `asyncScheduler`. */
  scheduler?: SchedulerLike;
}

/** What the sink has done so far. Rows are counted over all four tables. */
export interface PoseSinkStats {
  /** Rows committed to DuckDB. */
  written: number;
  /** Rows accepted and not yet committed. */
  pending: number;
  /** Rows refused (buffer full, sink closed, invalid) or given up at close; each was reported. */
  dropped: number;
  /** Committed batches. */
  flushes: number;
  /** Batches DuckDB refused (their rows stayed pending). */
  failedFlushes: number;
  /** Duration of the last committed batch, ms (0 before the first). */
  lastFlushMs: number;
  /** Committed rows per table. */
  frames: number;
  persons: number;
  events: number;
  alerts: number;
}

const KP_BYTES = KEYPOINT_FLOATS * 4;
const DP_BYTES = DENSE_POSE_FLOATS * 4;
const INT32_MAX = 2 ** 31 - 1;
/** Dates JS can represent; anything outside is not a time. */
const MAX_EPOCH_MS = 8.64e15;

function grownF64(a: Float64Array, n: number) {
  const b = new Float64Array(n);
  b.set(a);
  return b;
}
function grownF32(a: Float32Array, n: number) {
  const b = new Float32Array(n);
  b.set(a);
  return b;
}
function grownI32(a: Int32Array, n: number) {
  const b = new Int32Array(n);
  b.set(a);
  return b;
}
function grownU8(a: Uint8Array, n: number) {
  const b = new Uint8Array(n);
  b.set(a);
  return b;
}

/** An int32 or NaN (the buffers' null). */
function int32OrNaN(v: unknown): number {
  return typeof v === 'number' && Number.isInteger(v) && v >= -INT32_MAX && v <= INT32_MAX ? v : NaN;
}
function finiteOrNaN(v: unknown): number {
  return typeof v === 'number' ? v : NaN;
}
function text(v: unknown, fallback = ''): string {
  return typeof v === 'string' ? v : v === undefined || v === null ? fallback : String(v);
}
function timestamp(ms: number): DuckDBTimestampValue {
  return new DuckDBTimestampValue(BigInt(ms) * 1000n);
}
/** Epoch ms as an integer, or NaN when it is no time at all. */
function epochMs(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) && Math.abs(v) < MAX_EPOCH_MS ? Math.round(v) : NaN;
}
/** JSON text of event metadata; BigInts as strings. Undefined when it cannot be serialised. */
function jsonText(v: unknown): string | undefined {
  try {
    return JSON.stringify(v ?? {}, (_k, x: unknown) => (typeof x === 'bigint' ? x.toString() : x));
  } catch {
    return undefined;
  }
}
function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.map((x) => text(x)) : [];
}
function isFloatArray(v: unknown, n: number): v is ArrayLike<number> {
  return (v instanceof Float32Array || v instanceof Float64Array || Array.isArray(v)) && v.length === n;
}

/** Frame rows in typed columns; NaN is NULL in nullable numeric columns. */
class FrameColumns {
  n = 0;
  cap = 0;
  ts = new Float64Array(0);
  seq = new Float64Array(0);
  frameId = new Float64Array(0);
  personCount = new Int32Array(0);
  processingMs = new Float32Array(0);
  csiQuality = new Float32Array(0);
  avgConf = new Float32Array(0);
  maxConf = new Float32Array(0);
  env: string[] = [];
  source: string[] = [];
  model: string[] = [];

  reserve(n: number): void {
    if (n <= this.cap) return;
    const c = Math.max(n, this.cap * 2, 256);
    this.ts = grownF64(this.ts, c);
    this.seq = grownF64(this.seq, c);
    this.frameId = grownF64(this.frameId, c);
    this.personCount = grownI32(this.personCount, c);
    this.processingMs = grownF32(this.processingMs, c);
    this.csiQuality = grownF32(this.csiQuality, c);
    this.avgConf = grownF32(this.avgConf, c);
    this.maxConf = grownF32(this.maxConf, c);
    this.cap = c;
  }

  /** Drops the first `k` rows (written), keeping the rest in order. */
  shift(k: number): void {
    if (k === 0) return;
    const n = this.n;
    for (const a of [this.ts, this.seq, this.frameId, this.personCount, this.processingMs, this.csiQuality, this.avgConf, this.maxConf]) a.copyWithin(0, k, n);
    this.env.splice(0, k);
    this.source.splice(0, k);
    this.model.splice(0, k);
    this.n = n - k;
  }
}

/** Person rows in typed columns; keypoints and dense pose as packed float32 LE bytes. */
class PersonColumns {
  n = 0;
  cap = 0;
  ts = new Float64Array(0);
  seq = new Float64Array(0);
  frameId = new Float64Array(0);
  slot = new Int32Array(0);
  personId = new Int32Array(0);
  trackId = new Float64Array(0);
  trackAge = new Float64Array(0);
  confidence = new Float32Array(0);
  bboxX = new Float32Array(0);
  bboxY = new Float32Array(0);
  bboxW = new Float32Array(0);
  bboxH = new Float32Array(0);
  floorX = new Float32Array(0);
  floorY = new Float32Array(0);
  velocityX = new Float32Array(0);
  velocityY = new Float32Array(0);
  activityConf = new Float32Array(0);
  /** Keypoint bytes of each row: 204, or 0 for an anonymised person. */
  kpLength = new Int32Array(0);
  keypoints = new Uint8Array(0);
  private kpF32 = new Float32Array(0);
  dense = new Uint8Array(0);
  private dpF32 = new Float32Array(0);
  hasDense = new Uint8Array(0);
  env: string[] = [];
  activity: (string | null)[] = [];

  /** The typed columns that move together (all but the byte buffers). */
  private columns(): (Float64Array | Float32Array | Int32Array | Uint8Array)[] {
    return [
      this.ts,
      this.seq,
      this.frameId,
      this.slot,
      this.personId,
      this.trackId,
      this.trackAge,
      this.confidence,
      this.bboxX,
      this.bboxY,
      this.bboxW,
      this.bboxH,
      this.floorX,
      this.floorY,
      this.velocityX,
      this.velocityY,
      this.activityConf,
      this.kpLength,
      this.hasDense,
    ];
  }

  reserve(n: number): void {
    if (n <= this.cap) return;
    const c = Math.max(n, this.cap * 2, 512);
    this.ts = grownF64(this.ts, c);
    this.seq = grownF64(this.seq, c);
    this.frameId = grownF64(this.frameId, c);
    this.slot = grownI32(this.slot, c);
    this.personId = grownI32(this.personId, c);
    this.trackId = grownF64(this.trackId, c);
    this.trackAge = grownF64(this.trackAge, c);
    this.confidence = grownF32(this.confidence, c);
    this.bboxX = grownF32(this.bboxX, c);
    this.bboxY = grownF32(this.bboxY, c);
    this.bboxW = grownF32(this.bboxW, c);
    this.bboxH = grownF32(this.bboxH, c);
    this.floorX = grownF32(this.floorX, c);
    this.floorY = grownF32(this.floorY, c);
    this.velocityX = grownF32(this.velocityX, c);
    this.velocityY = grownF32(this.velocityY, c);
    this.activityConf = grownF32(this.activityConf, c);
    this.kpLength = grownI32(this.kpLength, c);
    this.keypoints = grownU8(this.keypoints, c * KP_BYTES);
    this.kpF32 = new Float32Array(this.keypoints.buffer);
    // Dense pose buffer grows only once a person carries one (setDense): most models give none.
    if (this.dense.length > 0) this.growDense(c);
    this.hasDense = grownU8(this.hasDense, c);
    this.cap = c;
  }

  /** Copies `src` floats into row `i`'s keypoint bytes, little-endian whatever the host. */
  setKeypoints(i: number, src: ArrayLike<number>): void {
    if (HOST_LITTLE_ENDIAN) this.kpF32.set(src, i * KEYPOINT_FLOATS);
    else {
      const dv = new DataView(this.keypoints.buffer, i * KP_BYTES, KP_BYTES);
      for (let j = 0; j < KEYPOINT_FLOATS; j++) dv.setFloat32(j * 4, src[j]!, true);
    }
  }

  private growDense(rows: number): void {
    this.dense = grownU8(this.dense, rows * DP_BYTES);
    this.dpF32 = new Float32Array(this.dense.buffer);
  }

  setDense(i: number, src: ArrayLike<number>): void {
    if (this.dense.length < this.cap * DP_BYTES) this.growDense(this.cap);
    if (HOST_LITTLE_ENDIAN) this.dpF32.set(src, i * DENSE_POSE_FLOATS);
    else {
      const dv = new DataView(this.dense.buffer, i * DP_BYTES, DP_BYTES);
      for (let j = 0; j < DENSE_POSE_FLOATS; j++) dv.setFloat32(j * 4, src[j]!, true);
    }
  }

  shift(k: number): void {
    if (k === 0) return;
    const n = this.n;
    for (const a of this.columns()) a.copyWithin(0, k, n);
    this.keypoints.copyWithin(0, k * KP_BYTES, n * KP_BYTES);
    this.dense.copyWithin(0, k * DP_BYTES, n * DP_BYTES);
    this.env.splice(0, k);
    this.activity.splice(0, k);
    this.n = n - k;
  }
}

/** One `activity_events` or `alerts` row, values already checked. */
interface NoticeRow {
  ts: number;
  id: string;
  type: string;
  severity: string;
  env: string;
  personId: number;
  trackId: number;
  confidence: number;
  x: number;
  y: number;
  zone: string | null;
  metadata: string;
  actions: string[];
}

/** An appender with the column types its data chunks need. */
interface TableAppender {
  appender: DuckDBAppender;
  types: DuckDBType[];
}

const STRING_LIST = LIST(VARCHAR);

async function openAppender(conn: DuckDBConnection, table: string, columns: readonly string[], expected?: readonly DuckDBTypeId[]): Promise<TableAppender> {
  const appender = await conn.createAppender(table);
  const types: DuckDBType[] = [];
  for (let i = 0; i < appender.columnCount; i++) types.push(appender.columnType(i));
  // A file whose table differs from this build's would write values into the wrong columns.
  if (types.length !== columns.length || (expected && expected.some((t, i) => types[i]!.typeId !== t))) {
    appender.closeSync();
    throw new StoreError('schema', `table ${table} does not have the columns this build writes (${columns.join(', ')})`);
  }
  return { appender, types };
}

const T = DuckDBTypeId;
const FRAME_TYPES = [T.TIMESTAMP, T.VARCHAR, T.VARCHAR, T.BIGINT, T.INTEGER, T.FLOAT, T.VARCHAR, T.FLOAT, T.FLOAT, T.FLOAT, T.BIGINT] as const;
const PERSON_TYPES = [
  T.TIMESTAMP,
  T.VARCHAR,
  T.BIGINT,
  T.INTEGER,
  T.INTEGER,
  T.INTEGER,
  T.INTEGER,
  T.FLOAT,
  T.FLOAT,
  T.FLOAT,
  T.FLOAT,
  T.FLOAT,
  T.FLOAT,
  T.FLOAT,
  T.FLOAT,
  T.FLOAT,
  T.VARCHAR,
  T.FLOAT,
  T.BLOB,
  T.BLOB,
  T.BIGINT,
] as const;
const EVENT_COLUMNS = 12;
const ALERT_COLUMNS = 13;

/** Lets other callbacks run between data chunks of a large batch. */
function yieldToLoop(): Promise<void> {
  return new Promise((r) => setImmediate(r));
}

/**
 * Writes pose frames, their persons, events and alerts to the store in batches.
 *
 * Rows are buffered in typed columns and appended through DuckDB appenders (frames and persons
 * as data chunks; keypoints and dense pose as one float32 BLOB per person), one transaction per
 * batch so a batch lands whole or not at all. A batch starts when `maxRows` rows are buffered,
 * `maxDelayMs` after the oldest buffered row, or on `flush()`/`close()`; batches never overlap.
 * When DuckDB refuses a batch, the error goes to `onError`, the rows stay buffered and are retried
 * with backoff; beyond `maxPendingRows` new frames are refused and counted. Nothing throws.
 *
 * @example
 * const sink = new PoseSink(store, { onError: (e) => log.warn(e.message) });
 * new StoreOutlet(svc, sink, onError); // src/outlets/store.ts: every frame of svc.pose$ to sink.write
 * // on shutdown: await store.close(); // closes the sink, writing what it holds
 */
export class PoseSink {
  private readonly maxRows: number;
  private readonly maxDelayMs: number;
  private readonly maxPending: number;
  private readonly retryBase: number;
  private readonly retryMax: number;
  private readonly onError: (e: StoreError) => void;
  private readonly scheduler: SchedulerLike;
  private readonly frames = new FrameColumns();
  private readonly persons = new PersonColumns();
  /** UTF-8 of the strings written (environments, sources, models, activities repeat). */
  private readonly utf8 = new Utf8Cache();
  private events: NoticeRow[] = [];
  private alerts: NoticeRow[] = [];
  private framesApp?: TableAppender;
  private personsApp?: TableAppender;
  private eventsApp?: DuckDBAppender;
  private alertsApp?: DuckDBAppender;
  private timer?: Subscription;
  private inFlight?: Promise<void>;
  private queued?: Promise<void>;
  private failing = false;
  /** The last failed batch's message, and rows given up since the last batch that committed. */
  private lastFailure = '';
  private lostSinceCommit = 0;
  private retryDelay: number;
  private isClosed = false;
  private closing?: Promise<void>;
  /** Last report time per reason, so a refusal storm yields one report per second per reason. */
  private readonly lastReport = new Map<string, number>();
  /** The storage order of the last frame taken in (`seq`, wall-clock microseconds, strictly increasing). */
  private lastSeq = 0;
  /** Arrival time of the oldest row not yet taken into a batch (scheduler clock). */
  private oldestAt: number | undefined;
  private readonly detach: () => void;
  private readonly s: PoseSinkStats = {
    written: 0,
    pending: 0,
    dropped: 0,
    flushes: 0,
    failedFlushes: 0,
    lastFlushMs: 0,
    frames: 0,
    persons: 0,
    events: 0,
    alerts: 0,
  };

  /**
   * @param store the open store; the sink attaches to it, so `store.close()` flushes the sink
   * @param options batch bounds, retry, error callback and scheduler
   */
  constructor(
    private readonly store: Store,
    options: PoseSinkOptions = {},
  ) {
    this.maxRows = Math.max(1, Math.floor(options.maxRows ?? 2000));
    this.maxDelayMs = Math.max(0, options.maxDelayMs ?? 250);
    this.maxPending = Math.max(this.maxRows, Math.floor(options.maxPendingRows ?? 100_000));
    this.retryBase = Math.max(1, options.retryDelayMs ?? 500);
    this.retryMax = Math.max(this.retryBase, options.maxRetryDelayMs ?? 10_000);
    this.retryDelay = this.retryBase;
    const cb = options.onError;
    this.onError = (e) => {
      try {
        cb?.(e);
      } catch {
        // A throwing error handler must not take the pipeline down with it.
      }
    };
    this.scheduler = options.scheduler ?? asyncScheduler;
    this.detach = store.attach(this);
    // A sink on a closed store could never write: refuse (and report) from the first frame.
    if (store.closed) this.isClosed = true;
  }

  /** A snapshot of the counters. */
  get stats(): PoseSinkStats {
    return { ...this.s, pending: this.pendingRows() };
  }

  /**
   * For the store's health: the last failed batch while its rows wait for a retry (undefined
   * while batches commit), and whether rows have been refused since (the buffer is full).
   */
  writeFailure(): StoreWriteFailure | undefined {
    if (!this.failing || this.isClosed) return undefined;
    return { message: `pose sink: ${this.lastFailure}`, losing: this.lostSinceCommit > 0 };
  }

  /** True once `close` has begun (further writes are refused). */
  get closed(): boolean {
    return this.isClosed;
  }

  private pendingRows(): number {
    return this.frames.n + this.persons.n + this.events.length + this.alerts.length;
  }

  private drop(rows: number, error: StoreError): void {
    this.s.dropped += rows;
    if (this.failing && error.reason === 'io') this.lostSinceCommit += rows;
    // One report per second while refusing, not one per frame.
    const now = this.scheduler.now();
    if (now - (this.lastReport.get(error.reason) ?? -Infinity) >= 1000) {
      this.lastReport.set(error.reason, now);
      this.onError(error);
    }
  }

  /**
   * Buffers one frame with its persons, events and alerts. Never throws.
   * @param frame the pose frame
   * @returns true when accepted (it will be written or its loss reported), false when refused
   */
  write(frame: PoseFrame): boolean {
    const persons: readonly PersonPose[] = Array.isArray(frame?.persons) ? frame.persons : [];
    const events: readonly ActivityEvent[] = Array.isArray(frame?.events) ? frame.events : [];
    const alerts: readonly PoseAlert[] = Array.isArray(frame?.alerts) ? frame.alerts : [];
    const rows = 1 + persons.length + events.length + alerts.length;
    if (this.isClosed) {
      this.drop(
        rows,
        new StoreError('closed', `pose sink is closed: ${rows} row(s) of frame ${String(frame?.frameId)} dropped (${this.s.dropped + rows} so far)`),
      );
      return false;
    }
    const ts = epochMs(frame?.time);
    const frameId = typeof frame?.frameId === 'number' && Number.isSafeInteger(frame.frameId) ? frame.frameId : NaN;
    if (Number.isNaN(ts) || Number.isNaN(frameId)) {
      this.drop(
        rows,
        new StoreError('invalid', `pose frame without a valid time or frameId dropped (time ${String(frame?.time)}, frameId ${String(frame?.frameId)})`),
      );
      return false;
    }
    if (this.pendingRows() + rows > this.maxPending) {
      this.drop(
        rows,
        new StoreError(
          'io',
          `pose sink buffer full (${this.pendingRows()} rows waiting for the database): frame ${frameId} dropped, ${this.s.dropped + rows} row(s) dropped so far`,
        ),
      );
      return false;
    }
    try {
      this.ingest(frame, ts, frameId, persons, events, alerts);
    } catch (e) {
      // ingest checks everything it reads; this is a last guard so a stream never sees a throw.
      this.drop(rows, new StoreError('invalid', `pose frame ${frameId} could not be buffered: ${(e as Error).message}`, { cause: e }));
      return false;
    }
    this.oldestAt ??= this.scheduler.now();
    this.schedule();
    return true;
  }

  private ingest(
    frame: PoseFrame,
    ts: number,
    frameId: number,
    persons: readonly PersonPose[],
    events: readonly ActivityEvent[],
    alerts: readonly PoseAlert[],
  ): void {
    const env = text(frame.environmentId, 'default');
    // Storage order: strictly increasing microseconds of the wall clock, so it also grows across restarts.
    const seq = (this.lastSeq = Math.max(this.lastSeq + 1, Date.now() * 1000));
    const P = this.persons;
    P.reserve(P.n + persons.length);
    let confSum = 0;
    let confN = 0;
    let confMax = -Infinity;
    let invalid = 0;
    const start = P.n;
    for (const p of persons) {
      // Keypoints are 51 floats, or none for an anonymised person (stored as an empty BLOB).
      const anonymous = p?.keypoints?.length === 0;
      if (
        !p ||
        (!anonymous && !isFloatArray(p.keypoints, KEYPOINT_FLOATS)) ||
        !p.bbox ||
        p.bbox.length < 4 ||
        (p.densePose !== undefined && !isFloatArray(p.densePose, DENSE_POSE_FLOATS))
      ) {
        invalid++;
        continue;
      }
      const i = P.n;
      const conf = finiteOrNaN(p.confidence);
      P.ts[i] = ts;
      P.seq[i] = seq;
      P.frameId[i] = frameId;
      P.env[i] = env;
      const slot = int32OrNaN(p.slot);
      const track = int32OrNaN(p.trackId);
      P.slot[i] = Number.isNaN(slot) ? i - start : slot;
      // person_id follows the alerts operator: the track id when tracked, else the model slot.
      P.personId[i] = Number.isNaN(track) ? P.slot[i]! : track;
      P.trackId[i] = track;
      P.trackAge[i] = int32OrNaN(p.trackAge);
      P.confidence[i] = conf;
      const bbox = p.bbox;
      P.bboxX[i] = bbox[0]!;
      P.bboxY[i] = bbox[1]!;
      P.bboxW[i] = bbox[2]!;
      P.bboxH[i] = bbox[3]!;
      P.floorX[i] = finiteOrNaN(p.floor?.x);
      P.floorY[i] = finiteOrNaN(p.floor?.y);
      P.velocityX[i] = finiteOrNaN(p.velocity?.x);
      P.velocityY[i] = finiteOrNaN(p.velocity?.y);
      P.activity[i] = typeof p.activity === 'string' ? p.activity : null;
      P.activityConf[i] = finiteOrNaN(p.activityConfidence);
      P.kpLength[i] = anonymous ? 0 : KP_BYTES;
      if (!anonymous) P.setKeypoints(i, p.keypoints);
      if (p.densePose !== undefined) {
        P.setDense(i, p.densePose);
        P.hasDense[i] = 1;
      } else P.hasDense[i] = 0;
      P.n = i + 1;
      if (Number.isFinite(conf)) {
        confSum += conf;
        confN++;
        if (conf > confMax) confMax = conf;
      }
    }
    const F = this.frames;
    F.reserve(F.n + 1);
    const f = F.n;
    F.ts[f] = ts;
    F.seq[f] = seq;
    F.frameId[f] = frameId;
    F.env[f] = env;
    F.source[f] = text(frame.sourceId);
    F.model[f] = text(frame.modelVersion);
    F.personCount[f] = persons.length;
    F.processingMs[f] = finiteOrNaN(frame.processingMs);
    F.csiQuality[f] = finiteOrNaN(frame.csiQuality);
    F.avgConf[f] = confN > 0 ? confSum / confN : NaN;
    F.maxConf[f] = confN > 0 ? confMax : NaN;
    F.n = f + 1;
    let badMeta = 0;
    for (const e of events) {
      const row = this.notice(e, e?.eventId, e?.actionsTaken, undefined, ts, env);
      if (row.metadata === 'null') badMeta++;
      this.events.push(row);
    }
    for (const a of alerts) {
      const row = this.notice(a, a?.alertId, a?.actionsRequired, a?.zone, ts, env);
      if (row.metadata === 'null') badMeta++;
      this.alerts.push(row);
    }
    if (invalid > 0) {
      this.drop(
        invalid,
        new StoreError('invalid', `frame ${frameId}: ${invalid} person(s) without 51 keypoint floats, a 4-float box or a 72-float dense pose dropped`),
      );
    }
    if (badMeta > 0) this.onError(new StoreError('invalid', `frame ${frameId}: ${badMeta} event/alert metadata could not be serialised; stored as null`));
  }

  private notice(n: ActivityEvent | PoseAlert, id: unknown, actions: unknown, zone: unknown, frameTs: number, frameEnv: string): NoticeRow {
    const t = epochMs(n?.time);
    return {
      ts: Number.isNaN(t) ? frameTs : t,
      id: text(id),
      type: text(n?.type),
      severity: text(n?.severity),
      env: text(n?.environmentId, frameEnv),
      personId: int32OrNaN(n?.personId),
      trackId: int32OrNaN(n?.trackId),
      confidence: finiteOrNaN(n?.confidence),
      x: finiteOrNaN(n?.location?.x),
      y: finiteOrNaN(n?.location?.y),
      zone: zone === undefined || zone === null ? null : text(zone),
      metadata: jsonText(n?.metadata) ?? 'null',
      actions: strings(actions),
    };
  }

  /** Starts a batch now (size bound) or arms the delay timer; not while failing (the retry timer owns that). */
  private schedule(): void {
    if (this.failing || this.isClosed) return;
    if (this.pendingRows() >= this.maxRows) {
      this.cancelTimer();
      void this.flush();
    } else if (!this.timer && !this.inFlight && this.oldestAt !== undefined) {
      // Counted from the oldest row's arrival: rows that came in during a batch have waited already.
      const due = Math.max(0, this.maxDelayMs - (this.scheduler.now() - this.oldestAt));
      this.timer = this.scheduler.schedule(() => {
        this.timer = undefined;
        void this.flush();
      }, due);
    }
  }

  private cancelTimer(): void {
    this.timer?.unsubscribe();
    this.timer = undefined;
  }

  /**
   * Writes everything buffered now. A flush already running finishes first (batches never
   * interleave); calls made meanwhile share the one flush queued behind it. Never rejects: a
   * failure goes to `onError` and the rows stay pending.
   * @returns when the batch has committed or failed
   */
  flush(): Promise<void> {
    if (!this.inFlight) {
      this.cancelTimer();
      this.inFlight = this.runFlush().finally(() => {
        this.inFlight = undefined;
        this.afterFlush();
      });
      return this.inFlight;
    }
    if (!this.queued) {
      this.queued = this.inFlight.then(() => {
        this.queued = undefined;
        return this.flush();
      });
    }
    return this.queued;
  }

  private afterFlush(): void {
    if (this.queued || this.isClosed || this.pendingRows() === 0) return;
    if (this.failing) {
      if (this.store.closed) {
        this.abandon(new StoreError('closed', `database ${this.store.path} is closed`));
        return;
      }
      this.timer ??= this.scheduler.schedule(() => {
        this.timer = undefined;
        void this.flush();
      }, this.retryDelay);
      this.retryDelay = Math.min(this.retryMax, this.retryDelay * 2);
      return;
    }
    // Rows that arrived during the batch: start the next one by the same rules.
    this.schedule();
  }

  private async runFlush(): Promise<void> {
    const nF = this.frames.n;
    const nP = this.persons.n;
    const nE = this.events.length;
    const nA = this.alerts.length;
    if (nF + nP + nE + nA === 0) return;
    const t0 = performance.now();
    const oldest = this.oldestAt;
    this.oldestAt = undefined;
    try {
      const seq = this.persons.seq;
      await this.store.withWriter((conn) => this.writeBatch(conn, nF, nP, nE, nA), { personSeq: nP > 0 ? [seq[0]!, seq[nP - 1]!] : undefined });
    } catch (e) {
      this.oldestAt = oldest;
      this.s.failedFlushes++;
      this.failing = true;
      const err = e instanceof StoreError ? e : new StoreError('io', (e as Error)?.message ?? String(e), { cause: e });
      this.lastFailure = err.message;
      this.onError(new StoreError(err.reason, `pose batch of ${nF + nP + nE + nA} row(s) not written, kept for retry: ${err.message}`, { cause: err }));
      return;
    }
    this.frames.shift(nF);
    this.persons.shift(nP);
    this.events.splice(0, nE);
    this.alerts.splice(0, nA);
    this.s.frames += nF;
    this.s.persons += nP;
    this.s.events += nE;
    this.s.alerts += nA;
    this.s.written += nF + nP + nE + nA;
    this.s.flushes++;
    this.s.lastFlushMs = performance.now() - t0;
    this.failing = false;
    this.lostSinceCommit = 0;
    this.retryDelay = this.retryBase;
  }

  private async writeBatch(conn: DuckDBConnection, nF: number, nP: number, nE: number, nA: number): Promise<void> {
    await conn.run('BEGIN TRANSACTION');
    try {
      this.framesApp ??= await openAppender(conn, 'pose_frames', POSE_FRAME_COLUMNS, FRAME_TYPES);
      this.personsApp ??= await openAppender(conn, 'pose_persons', POSE_PERSON_COLUMNS, PERSON_TYPES);
      this.eventsApp ??= await conn.createAppender('activity_events');
      this.alertsApp ??= await conn.createAppender('alerts');
      if (this.eventsApp.columnCount !== EVENT_COLUMNS || this.alertsApp.columnCount !== ALERT_COLUMNS) {
        throw new StoreError('schema', 'tables activity_events and alerts do not have the columns this build writes');
      }
      await this.appendFrames(this.framesApp, nF);
      await this.appendPersons(this.personsApp, nP);
      this.appendNotices(this.eventsApp, this.events, nE, false);
      this.eventsApp.flushSync();
      this.appendNotices(this.alertsApp, this.alerts, nA, true);
      this.alertsApp.flushSync();
      await conn.run('COMMIT');
    } catch (e) {
      // An appender that failed holds rows or is invalidated: drop all four, start clean next time.
      this.dropAppenders();
      await conn.run('ROLLBACK').catch(() => undefined);
      throw e;
    }
  }

  private dropAppenders(): void {
    for (const a of [this.framesApp?.appender, this.personsApp?.appender, this.eventsApp, this.alertsApp]) {
      if (!a) continue;
      try {
        a.clear();
        a.closeSync();
      } catch {
        // Closing a broken appender can fail again; it is discarded either way.
      }
    }
    this.framesApp = this.personsApp = undefined;
    this.eventsApp = this.alertsApp = undefined;
  }

  /**
   * Appends `n` rows to `t` as data chunks of whole columns (see vectorWrite.ts), each chunk into
   * the transaction before the next is built: the main thread is blocked for one chunk at a time.
   */
  private async appendChunks(t: TableAppender, n: number, fill: (v: (c: number) => duckdb.Vector, off: number, m: number) => void): Promise<void> {
    for (let off = 0; off < n; off += CHUNK_ROWS) {
      if (off > 0) await yieldToLoop();
      const m = Math.min(CHUNK_ROWS, n - off);
      const chunk = DuckDBDataChunk.create(t.types, m);
      fill((c) => duckdb.data_chunk_get_vector(chunk.chunk, c), off, m);
      t.appender.appendDataChunk(chunk);
      t.appender.flushSync();
    }
  }

  private appendFrames(t: TableAppender, n: number): Promise<void> {
    const F = this.frames;
    const utf8 = this.utf8;
    return this.appendChunks(t, n, (v, off, m) => {
      writeTimestampMs(v(0), F.ts, off, m);
      writeVarchar(v(1), F.env, off, m, utf8);
      writeVarchar(v(2), F.source, off, m, utf8);
      writeInt64(v(3), F.frameId, off, m);
      writeInt32(v(4), F.personCount, off, m);
      writeFloat32(v(5), F.processingMs, off, m, true);
      writeVarchar(v(6), F.model, off, m, utf8);
      writeFloat32(v(7), F.csiQuality, off, m, true);
      writeFloat32(v(8), F.avgConf, off, m, true);
      writeFloat32(v(9), F.maxConf, off, m, true);
      writeInt64(v(10), F.seq, off, m);
    });
  }

  private appendPersons(t: TableAppender, n: number): Promise<void> {
    const P = this.persons;
    const utf8 = this.utf8;
    const kpLength = (i: number) => P.kpLength[i]!;
    const dpLength = (i: number) => (P.hasDense[i] ? DP_BYTES : -1);
    return this.appendChunks(t, n, (v, off, m) => {
      writeTimestampMs(v(0), P.ts, off, m);
      writeVarchar(v(1), P.env, off, m, utf8);
      writeInt64(v(2), P.frameId, off, m);
      writeInt32(v(3), P.slot, off, m);
      writeInt32(v(4), P.personId, off, m);
      writeNullableInt32(v(5), P.trackId, off, m);
      writeNullableInt32(v(6), P.trackAge, off, m);
      writeFloat32(v(7), P.confidence, off, m, false);
      writeFloat32(v(8), P.bboxX, off, m, false);
      writeFloat32(v(9), P.bboxY, off, m, false);
      writeFloat32(v(10), P.bboxW, off, m, false);
      writeFloat32(v(11), P.bboxH, off, m, false);
      writeFloat32(v(12), P.floorX, off, m, true);
      writeFloat32(v(13), P.floorY, off, m, true);
      writeFloat32(v(14), P.velocityX, off, m, true);
      writeFloat32(v(15), P.velocityY, off, m, true);
      writeVarchar(v(16), P.activity, off, m, utf8);
      writeFloat32(v(17), P.activityConf, off, m, true);
      writeBlobs(v(18), P.keypoints, KP_BYTES, kpLength, off, m);
      writeBlobs(v(19), P.dense, DP_BYTES, dpLength, off, m);
      writeInt64(v(20), P.seq, off, m);
    });
  }

  /** Events and alerts are few per frame: a row appender, LIST included, is plenty fast here. */
  private appendNotices(a: DuckDBAppender, rows: readonly NoticeRow[], n: number, alert: boolean): void {
    const opt = (v: number, f: (x: number) => void): void => (Number.isNaN(v) ? a.appendNull() : f(v));
    for (let i = 0; i < n; i++) {
      const r = rows[i]!;
      a.appendTimestamp(timestamp(r.ts));
      a.appendVarchar(r.id);
      a.appendVarchar(r.type);
      a.appendVarchar(r.severity);
      a.appendVarchar(r.env);
      opt(r.personId, (x) => a.appendInteger(x));
      opt(r.trackId, (x) => a.appendInteger(x));
      opt(r.confidence, (x) => a.appendDouble(x));
      opt(r.x, (x) => a.appendDouble(x));
      opt(r.y, (x) => a.appendDouble(x));
      if (alert) {
        if (r.zone === null) a.appendNull();
        else a.appendVarchar(r.zone);
      }
      a.appendVarchar(r.metadata);
      a.appendList(r.actions, STRING_LIST);
      a.endRow();
    }
  }

  /** Gives up every pending row (counted and reported) and refuses further writes. */
  private abandon(cause: StoreError): void {
    const pending = this.pendingRows();
    this.isClosed = true;
    this.cancelTimer();
    this.frames.shift(this.frames.n);
    this.persons.shift(this.persons.n);
    this.events = [];
    this.alerts = [];
    this.oldestAt = undefined;
    if (pending > 0) {
      this.s.dropped += pending;
      this.onError(new StoreError(cause.reason, `pose sink gave up ${pending} unwritten row(s): ${cause.message}`, { cause }));
    }
  }

  /**
   * Writes what is buffered (one last attempt), then refuses further writes. Rows that still
   * cannot be written are counted as dropped and reported. Idempotent; never rejects.
   * @returns when done
   */
  close(): Promise<void> {
    if (this.closing) return this.closing;
    this.closing = (async () => {
      // Refuse new frames first, so the final batch below is the last one.
      this.isClosed = true;
      this.cancelTimer();
      this.failing = false;
      await this.flush();
      this.cancelTimer();
      if (this.pendingRows() > 0) this.abandon(new StoreError('io', 'the final flush at close failed'));
      const apps = [this.framesApp?.appender, this.personsApp?.appender, this.eventsApp, this.alertsApp];
      this.framesApp = this.personsApp = undefined;
      this.eventsApp = this.alertsApp = undefined;
      const closeAll = (): void => {
        for (const a of apps) {
          try {
            a?.closeSync();
          } catch {
            // Empty after the last flush; a failure to close it loses nothing.
          }
        }
      };
      if (this.store.closed) closeAll();
      else await this.store.withWriter(closeAll, {}).catch(() => undefined);
      this.detach();
    })();
    return this.closing;
  }
}
