import type { ApiError } from '../errors.js';
import type { Form } from '../render/frame.js';

export type { Form };

/** `X-Response-Form: a|b` picks the form per request; anything else falls back to the deployment default. */
export function pickForm(header: string, fallback: Form): Form {
  const h = header.trim().toLowerCase();
  return h === 'a' || h === 'b' ? h : fallback;
}

/**
 * A success body: Form A is the resource itself; Form B wraps it in
 * `{ success, data, timestamp, request_id }` (plus `pagination` beside `data` when given).
 */
export function successBody(form: Form, data: unknown, requestId: string, extra?: Record<string, unknown>): unknown {
  if (form === 'a') return data;
  return { success: true, data, ...(extra ?? {}), timestamp: new Date().toISOString(), request_id: requestId };
}

/** An error body in the spec's layout for the form, with the validation details it describes. */
export function errorBody(form: Form, err: ApiError, requestId: string): unknown {
  const timestamp = new Date().toISOString();
  const details = { ...err.details };
  const fieldErrors = details.field_errors as Array<{ field: string; message: string; received_value?: unknown }> | undefined;
  if (err.code === 'RATE_LIMIT_EXCEEDED') {
    // Form A: limit, window_seconds, reset_time; Form B: limit, window, reset_at.
    const { limit, window, reset_at, ...rest } = details as { limit: number; window: number | null; reset_at: string | null };
    const d = form === 'a' ? { limit, window_seconds: window, reset_time: reset_at, ...rest } : { limit, window, reset_at, ...rest };
    return form === 'a'
      ? { error: { code: err.code, message: err.message, details: d, timestamp, request_id: requestId } }
      : { success: false, error: { code: err.code, message: err.message, details: d }, timestamp, request_id: requestId };
  }
  if (form === 'a') {
    return { error: { code: err.code, message: err.message, details, timestamp, request_id: requestId } };
  }
  if (fieldErrors && fieldErrors.length) {
    const first = fieldErrors[0]!;
    const { field_errors: _omit, ...rest } = details;
    return {
      success: false,
      error: { code: err.code, message: err.message, details: { field: first.field, reason: first.message, ...rest, errors: fieldErrors } },
      timestamp,
      request_id: requestId,
    };
  }
  return { success: false, error: { code: err.code, message: err.message, details }, timestamp, request_id: requestId };
}
