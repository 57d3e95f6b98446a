/**
 * Error codes of DECISIONS "Errors" and their HTTP statuses, mapped in this one place. Handlers
 * throw ApiError; the server renders it in the request's response form.
 */
export type ErrorCode =
  | 'VALIDATION_ERROR'
  | 'AUTHENTICATION_ERROR'
  | 'AUTHORIZATION_ERROR'
  | 'RESOURCE_NOT_FOUND'
  | 'POSE_DATA_NOT_FOUND'
  | 'METHOD_NOT_ALLOWED'
  | 'SYSTEM_STATE_CONFLICT'
  | 'PAYLOAD_TOO_LARGE'
  | 'RATE_LIMIT_EXCEEDED'
  | 'SYSTEM_ERROR'
  | 'HARDWARE_ERROR'
  | 'SYSTEM_NOT_READY'
  | 'MODEL_ERROR';

const STATUS: Record<ErrorCode, number> = {
  VALIDATION_ERROR: 422,
  AUTHENTICATION_ERROR: 401,
  AUTHORIZATION_ERROR: 403,
  RESOURCE_NOT_FOUND: 404,
  POSE_DATA_NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  SYSTEM_STATE_CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  RATE_LIMIT_EXCEEDED: 429,
  SYSTEM_ERROR: 500,
  HARDWARE_ERROR: 502,
  SYSTEM_NOT_READY: 503,
  MODEL_ERROR: 503,
};

/** One field that broke a rule. */
export interface FieldError {
  field: string;
  message: string;
  received_value?: unknown;
}

/** An error answer: code, human message, details, and the HTTP status the code maps to. */
export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
    /** Overrides the code's status: VALIDATION_ERROR is 400 for an unparseable body or query. */
    status?: number,
    /** Extra response headers (e.g. Allow on 405). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'ApiError';
    this.status = status ?? STATUS[code];
  }

  /** 422: fields that break rules. Form A shows them as `field_errors`, Form B the first as `field`/`reason`. */
  static fields(errors: FieldError[], message?: string): ApiError {
    const first = errors[0];
    return new ApiError('VALIDATION_ERROR', message ?? (first ? first.message : 'validation failed'), {
      field_errors: errors,
    });
  }

  /** 400: a body or query that cannot be parsed at all. */
  static unparseable(message: string, details: Record<string, unknown> = {}): ApiError {
    return new ApiError('VALIDATION_ERROR', message, details, 400);
  }
}

/** HTTP status of an error code. */
export function statusOf(code: ErrorCode): number {
  return STATUS[code];
}

/** The reason phrase uWebSockets.js needs in a status line. */
export const REASON: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  202: 'Accepted',
  204: 'No Content',
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  413: 'Payload Too Large',
  422: 'Unprocessable Entity',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};
