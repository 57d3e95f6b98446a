import { ApiError, type FieldError } from '../errors.js';

/**
 * Field-by-field readers for query strings and JSON bodies. Each collects errors instead of
 * stopping at the first, so one 422 lists every bad field (Form A `field_errors`).
 */
export class Checker {
  readonly errors: FieldError[] = [];

  private bad(field: string, message: string, received: unknown): undefined {
    this.errors.push({ field, message, received_value: received === undefined ? null : received });
    return undefined;
  }

  /** A query number in [min, max]; undefined when absent. */
  queryNumber(q: URLSearchParams, name: string, min: number, max: number): number | undefined {
    const s = q.get(name);
    if (s === null) return undefined;
    const v = s.trim() === '' ? NaN : Number(s);
    if (!Number.isFinite(v)) return this.bad(name, `${name} must be a number`, s);
    if (v < min || v > max) return this.bad(name, `${name} must be between ${min} and ${max}`, s);
    return v;
  }

  /** A query integer in [min, max]. */
  queryInt(q: URLSearchParams, name: string, min: number, max: number): number | undefined {
    const v = this.queryNumber(q, name, min, max);
    if (v !== undefined && !Number.isInteger(v)) return this.bad(name, `${name} must be an integer`, q.get(name));
    return v;
  }

  /** A query boolean (`true`/`false`/`1`/`0`). */
  queryBool(q: URLSearchParams, name: string): boolean | undefined {
    const s = q.get(name);
    if (s === null) return undefined;
    if (s === 'true' || s === '1') return true;
    if (s === 'false' || s === '0') return false;
    return this.bad(name, `${name} must be true or false`, s);
  }

  /** A query string of at most `max` characters, optionally one of `values`. */
  queryString(q: URLSearchParams, name: string, max = 128, values?: readonly string[]): string | undefined {
    const s = q.get(name);
    if (s === null) return undefined;
    if (s.length === 0 || s.length > max) return this.bad(name, `${name} must be 1 to ${max} characters`, s);
    if (values && !values.includes(s)) return this.bad(name, `${name} must be one of ${values.join(', ')}`, s);
    return s;
  }

  /** An ISO 8601 time in the query, as epoch ms. */
  queryTime(q: URLSearchParams, name: string, required = false): number | undefined {
    const s = q.get(name);
    if (s === null) return required ? this.bad(name, `${name} is required (ISO 8601)`, null) : undefined;
    const t = Date.parse(s);
    if (!Number.isFinite(t)) return this.bad(name, `${name} must be an ISO 8601 time`, s);
    return t;
  }

  /** Rejects query parameters that are not in `known`. */
  onlyQuery(q: URLSearchParams, known: readonly string[]): void {
    for (const k of q.keys()) if (!known.includes(k)) this.bad(k, `unknown query parameter ${k} (known: ${known.join(', ') || 'none'})`, q.get(k));
  }

  // Body fields ---------------------------------------------------------------------------

  object(v: unknown, field: string, required: boolean): Record<string, unknown> | undefined {
    if (v === undefined) return required ? this.bad(field, `${field} is required`, v) : undefined;
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return this.bad(field, `${field} must be an object`, v);
    return v as Record<string, unknown>;
  }

  number(v: unknown, field: string, min: number, max: number, required = false): number | undefined {
    if (v === undefined) return required ? this.bad(field, `${field} is required`, v) : undefined;
    if (typeof v !== 'number' || !Number.isFinite(v)) return this.bad(field, `${field} must be a number`, v);
    if (v < min || v > max) return this.bad(field, `${field} must be between ${min} and ${max}`, v);
    return v;
  }

  int(v: unknown, field: string, min: number, max: number, required = false): number | undefined {
    const n = this.number(v, field, min, max, required);
    if (n !== undefined && !Number.isInteger(n)) return this.bad(field, `${field} must be an integer`, v);
    return n;
  }

  bool(v: unknown, field: string, required = false): boolean | undefined {
    if (v === undefined) return required ? this.bad(field, `${field} is required`, v) : undefined;
    if (typeof v !== 'boolean') return this.bad(field, `${field} must be true or false`, v);
    return v;
  }

  string(v: unknown, field: string, max = 256, required = false, values?: readonly string[]): string | undefined {
    if (v === undefined) return required ? this.bad(field, `${field} is required`, v) : undefined;
    if (typeof v !== 'string') return this.bad(field, `${field} must be a string`, v);
    if (v.length > max) return this.bad(field, `${field} must be at most ${max} characters`, v.slice(0, 64));
    if (values && !values.includes(v)) return this.bad(field, `${field} must be one of ${values.join(', ')}`, v);
    return v;
  }

  time(v: unknown, field: string, required = false): number | undefined {
    const s = this.string(v, field, 64, required);
    if (s === undefined) return undefined;
    const t = Date.parse(s);
    if (!Number.isFinite(t)) return this.bad(field, `${field} must be an ISO 8601 time`, v);
    return t;
  }

  /** Rejects keys of `obj` that are not in `known`. */
  only(obj: Record<string, unknown> | undefined, prefix: string, known: readonly string[]): void {
    if (!obj) return;
    for (const k of Object.keys(obj)) if (!known.includes(k)) this.bad(prefix ? `${prefix}.${k}` : k, `unknown field ${prefix ? `${prefix}.${k}` : k}`, obj[k]);
  }

  /** Throws a 422 listing every collected error. */
  done(): void {
    if (this.errors.length) throw ApiError.fields(this.errors);
  }
}
