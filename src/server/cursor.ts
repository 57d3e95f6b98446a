import type { Checker } from './validate.js';

/**
 * Paging cursors that carry their query (Form A listings: `/pose/history`, `/analytics/events`).
 *
 * A cursor is opaque to clients: URL-safe base64 of `{v, at, q, n}`, where `at` is where the last
 * page ended, `q` the listing's query parameters as the first request resolved them (defaults
 * filled in, times as epoch ms) and `n` its page size. A request with nothing but `cursor=`
 * continues the listing. A request may send parameters with the cursor as well: each must say
 * what the cursor's query says (compared by value, so `+00:00` and `Z` are the same time), or
 * the request is refused with 422 naming the parameter; the page size (`limit`) is free.
 * Silently letting the cursor win would answer a different query than the one asked.
 *
 * A cursor holds nothing a client could not send as parameters, so it is not signed; what it
 * decodes to is checked as strictly as the parameters are.
 */

/** A query parameter's value as a cursor keeps it: a string, a number, or null when not given. */
export type CursorValue = string | number | null;

/** A decoded cursor. */
export interface QueryCursor<A> {
  /** Where the last page ended. */
  at: A;
  /** The query parameters, by their request names. */
  query: Record<string, CursorValue>;
  /** The page size. */
  limit: number;
}

/** Longest cursor text accepted (a cursor of ours is a few hundred characters). */
const MAX_CURSOR_CHARS = 4096;
/** The largest epoch ms a JS Date holds (±275,760 years; DuckDB's TIMESTAMP holds more). */
const MAX_DATE_MS = 8.64e15;

/**
 * Whether a cursor value is a time a parameter could have named (epoch ms a Date holds), or null.
 * @param v the value
 */
export function cursorTime(v: CursorValue): boolean {
  return v === null || (typeof v === 'number' && Number.isSafeInteger(v) && Math.abs(v) <= MAX_DATE_MS);
}

/**
 * Encodes a cursor.
 * @param at where the page ended (JSON-serialisable)
 * @param query the listing's parameters, by request name
 * @param limit the page size
 * @returns the opaque text for `next_cursor`
 */
export function encodeQueryCursor(at: unknown, query: Readonly<Record<string, CursorValue>>, limit: number): string {
  return Buffer.from(JSON.stringify({ v: 1, at, q: query, n: limit }), 'utf8').toString('base64url');
}

/**
 * Decodes a cursor made by {@link encodeQueryCursor} for a listing whose query has exactly the
 * parameters of `fields`.
 * @param raw the `cursor` parameter
 * @param fields per parameter, whether a value is one it may take (null: not given)
 * @param at whether the position is one of this listing's
 * @param maxLimit the largest page size
 * @returns the cursor, or undefined when `raw` is not such a cursor
 */
export function decodeQueryCursor<A>(
  raw: string,
  fields: Readonly<Record<string, (v: CursorValue) => boolean>>,
  at: (v: unknown) => v is A,
  maxLimit: number,
): QueryCursor<A> | undefined {
  if (raw.length === 0 || raw.length > MAX_CURSOR_CHARS) return undefined;
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (v === null || typeof v !== 'object') return undefined;
  const o = v as { v?: unknown; at?: unknown; q?: unknown; n?: unknown };
  if (o.v !== 1 || !at(o.at) || !Number.isInteger(o.n) || (o.n as number) < 1 || (o.n as number) > maxLimit) return undefined;
  if (o.q === null || typeof o.q !== 'object' || Array.isArray(o.q)) return undefined;
  const q = o.q as Record<string, unknown>;
  const names = Object.keys(fields);
  if (Object.keys(q).length !== names.length) return undefined;
  for (const name of names) {
    const x = q[name];
    if (!(x === null || typeof x === 'string' || (typeof x === 'number' && Number.isFinite(x))) || !fields[name]!(x)) return undefined;
  }
  return { at: o.at, query: q as Record<string, CursorValue>, limit: o.n as number };
}

/**
 * The query a cursor continues, checked against the parameters the request sent with it: each
 * one sent must equal the cursor's (an error naming it otherwise, pushed onto `c`).
 * @param c the request's checker
 * @param sent the request's parsed parameters, undefined where not sent
 * @param cursor the decoded cursor
 * @returns the cursor's query
 */
export function cursorQuery(c: Checker, sent: Readonly<Record<string, CursorValue | undefined>>, cursor: QueryCursor<unknown>): Record<string, CursorValue> {
  for (const [name, value] of Object.entries(sent)) {
    if (value === undefined || value === cursor.query[name]) continue;
    const was = cursor.query[name];
    c.errors.push({
      field: name,
      message:
        was === null || was === undefined
          ? `the listing this cursor continues has no ${name}: send the cursor alone, or start a new listing without it`
          : `${name} differs from the listing this cursor continues (${typeof was === 'number' && name.endsWith('_time') ? new Date(was).toISOString() : String(was)}): send the cursor alone, or start a new listing without it`,
      received_value: value,
    });
  }
  return cursor.query;
}
