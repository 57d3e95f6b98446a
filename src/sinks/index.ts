import { createWriteStream } from 'node:fs';
import type { Writable } from 'node:stream';
import type { Observable, Subscription } from 'rxjs';
import type { ParamSpec, ParamValues } from '../engine/spec.js';
import { toJsonLine } from '../csi/json.js';

/** Where a sink writes and reports. */
export interface SinkIO {
  stdout: Writable;
  stderr: Writable;
}

/** What a finished sink reports. */
export interface SinkSummary {
  items: number;
  seconds: number;
}

/** A running sink: `done` settles when the stream ends (rejects on a stream error). */
export interface RunningSink {
  readonly done: Promise<SinkSummary>;
  /** Stops consuming (on SIGINT) and flushes; `done` then resolves. */
  stop(): void;
}

export interface SinkSpec {
  readonly name: string;
  readonly summary: string;
  readonly params: readonly ParamSpec[];
  run(source: Observable<unknown>, params: ParamValues, io: SinkIO): RunningSink;
}

/** Subscribes `onItem` to the source and settles once, on completion, error or stop. */
function consume(
  source: Observable<unknown>,
  onItem: (v: unknown) => void,
  finish: (s: SinkSummary) => Promise<void> | void,
): RunningSink {
  const t0 = performance.now();
  let items = 0;
  let sub: Subscription | undefined;
  let settle!: (e?: unknown) => void;
  const done = new Promise<SinkSummary>((resolve, reject) => {
    let settled = false;
    settle = (e?: unknown) => {
      if (settled) return;
      settled = true;
      const s = { items, seconds: (performance.now() - t0) / 1000 };
      Promise.resolve(finish(s)).then(
        () => (e === undefined ? resolve(s) : reject(e)),
        reject,
      );
    };
  });
  sub = source.subscribe({
    next(v) {
      items++;
      onItem(v);
    },
    error: (e) => settle(e ?? new Error('stream failed')),
    complete: () => settle(),
  });
  return {
    done,
    stop() {
      sub?.unsubscribe();
      settle();
    },
  };
}

const ndjson: SinkSpec = {
  name: 'ndjson',
  summary: 'One JSON object per line per item (frames as `csipose decode` prints them plus time and ids)',
  params: [{ name: 'path', type: 'string', default: '-', description: 'file to write; - is standard output' }],
  run(source, params, io) {
    const out: Writable = params.path === '-' ? io.stdout : createWriteStream(String(params.path));
    let broken = false;
    out.on('error', () => {
      // A closed pipe (e.g. `| head`) ends output; the stream is stopped below.
      broken = true;
      running.stop();
    });
    const running = consume(
      source,
      (v) => {
        if (!broken) out.write(toJsonLine(v) + '\n');
      },
      () =>
        out === io.stdout
          ? undefined
          : new Promise<void>((r) => (out as ReturnType<typeof createWriteStream>).end(r)),
    );
    return running;
  },
};

const stats: SinkSpec = {
  name: 'stats',
  summary: 'Counts items and prints the rate to stderr every interval, then a summary',
  params: [{ name: 'interval', type: 'number', default: 1, min: 0.1, max: 3600, description: 'seconds between reports' }],
  run(source, params, io) {
    let count = 0;
    let last = 0;
    let lastT = performance.now();
    const timer = setInterval(() => {
      const now = performance.now();
      const rate = ((count - last) * 1000) / (now - lastT);
      io.stderr.write(`items=${count} rate=${rate.toFixed(1)}/s\n`);
      last = count;
      lastT = now;
    }, Number(params.interval) * 1000);
    timer.unref();
    return consume(
      source,
      () => {
        count++;
      },
      (s) => {
        clearInterval(timer);
        io.stderr.write(`done: ${s.items} items in ${s.seconds.toFixed(3)} s (${(s.items / Math.max(s.seconds, 1e-9)).toFixed(1)}/s)\n`);
      },
    );
  },
};

const nullSink: SinkSpec = {
  name: 'null',
  summary: 'Discards items (for measuring a pipeline); prints the count at the end',
  params: [],
  run(source, _params, io) {
    return consume(source, () => undefined, (s) => {
      io.stderr.write(`done: ${s.items} items in ${s.seconds.toFixed(3)} s\n`);
    });
  },
};

export const SINKS: ReadonlyMap<string, SinkSpec> = new Map([ndjson, stats, nullSink].map((s) => [s.name, s]));
