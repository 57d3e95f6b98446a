import type { ActivityEvent, AlertSeverity, PoseAlert } from '../pose/types.js';
import type { FrameShape } from '../render/view.js';
import type { Form } from '../render/frame.js';
import type { ErrorCode } from '../errors.js';
import { ZONE_SEVERITIES } from '../config/schema.js';

/**
 * What a subscriber asks of the service's streams: a channel and its filters, read and
 * normalised, and whether an item passes them. One reader and one set of matchers for every
 * outlet that takes subscriptions: the `/ws/pose` protocol (src/server/ws/protocol.ts) and the
 * webhooks (src/outlets/webhooks.ts). Pure: no sockets, no files.
 */

/** Every channel a subscription may name; each outlet takes its own part of the list. */
export const SUBSCRIPTION_CHANNELS = ['pose_updates', 'alerts', 'events'] as const;
export type SubscriptionChannel = (typeof SUBSCRIPTION_CHANNELS)[number];
export const ALERT_TYPES: readonly PoseAlert['type'][] = ['fall_detection', 'inactivity', 'intrusion'];
export const EVENT_TYPES: readonly ActivityEvent['type'][] = ['fall_detection', 'fall_recovery', 'inactivity', 'intrusion', 'activity_change'];
export const SEVERITIES: readonly AlertSeverity[] = ZONE_SEVERITIES;
/** Most ids a `person_ids` filter may list. */
export const MAX_PERSON_IDS = 100;

/** A pose_updates subscription's filters with every default filled in (`filters_applied`). */
export interface PoseFilters {
  /** Only these environments (sorted, distinct); absent = every one. */
  environment_ids?: string[];
  min_confidence: number;
  /** Sorted, distinct; null = every person. */
  person_ids: number[] | null;
  include_keypoints: boolean;
  include_dense_pose: boolean;
}

/** An alerts subscription's filters with every default filled in. */
export interface AlertFilters {
  /** Only these environments (sorted, distinct); absent = every one. */
  environment_ids?: string[];
  /** Sorted, distinct. */
  alert_types: PoseAlert['type'][];
  severity: AlertSeverity[];
}

/** An events (activity events) subscription's filters with every default filled in. */
export interface EventFilters {
  /** Only these environments (sorted, distinct); absent = every one. */
  environment_ids?: string[];
  /** Sorted, distinct. */
  event_types: ActivityEvent['type'][];
  severity: AlertSeverity[];
}

/** A subscription request, read and normalised. */
export type SubscribeRequest =
  { channel: 'pose_updates'; filters: PoseFilters } | { channel: 'alerts'; filters: AlertFilters } | { channel: 'events'; filters: EventFilters };

/**
 * A request that cannot be taken: `details.field` names the field at fault (with the prefix the
 * caller gave), `details.received_value` what it held. The WebSocket answers it with an `error`
 * message, a REST route with a 422.
 */
export class ProtocolError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'ProtocolError';
  }
}

/**
 * Whether a value is a plain JSON object.
 * @param v any value
 */
export function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * The error for a field that breaks a rule.
 * @param field the field's path, as the client wrote it
 * @param message what is wrong
 * @param received what it held
 */
export function bad(field: string, message: string, received: unknown): ProtocolError {
  return new ProtocolError('VALIDATION_ERROR', message, { field, received_value: received === undefined ? null : received });
}

/**
 * Refuses keys of `o` not in `known`.
 * @param o the object
 * @param where its path ('' at the top)
 * @param known the keys it may have
 */
export function onlyKeys(o: Record<string, unknown>, where: string, known: readonly string[]): void {
  for (const k of Object.keys(o)) {
    if (!known.includes(k)) throw bad(where ? `${where}.${k}` : k, `unknown field ${where ? `${where}.${k}` : k} (known: ${known.join(', ')})`, o[k]);
  }
}

function bool(v: unknown, field: string, fallback: boolean): boolean {
  if (v === undefined) return fallback;
  if (typeof v !== 'boolean') throw bad(field, `${field} must be true or false`, v);
  return v;
}

/** A list of allowed strings, sorted and distinct; all of them when absent. */
function choices<T extends string>(v: unknown, field: string, allowed: readonly T[]): T[] {
  if (v === undefined) return [...allowed].sort();
  if (!Array.isArray(v) || v.length === 0 || v.length > allowed.length * 4) throw bad(field, `${field} must be a non-empty array of: ${allowed.join(', ')}`, v);
  for (const x of v) if (!allowed.includes(x as T)) throw bad(field, `${field} must hold only: ${allowed.join(', ')}`, x);
  return [...new Set(v as T[])].sort();
}

/** Most environments an `environment_ids` filter may list. */
export const MAX_ENVIRONMENT_IDS = 100;

/**
 * An `environment_ids` filter, sorted and distinct, as a field to spread into the filters: absent
 * when not given (every environment; a subscription without it reads as before it existed).
 */
function environmentIds(f: Record<string, unknown>, at: string): { environment_ids?: string[] } {
  const v = f.environment_ids;
  if (v === undefined) return {};
  const field = `${at}.environment_ids`;
  if (!Array.isArray(v) || v.length === 0 || v.length > MAX_ENVIRONMENT_IDS)
    throw bad(field, `${field} must be an array of 1 to ${MAX_ENVIRONMENT_IDS} environment ids`, v);
  for (const x of v)
    if (typeof x !== 'string' || x.length === 0 || x.length > 64) throw bad(field, `${field} must hold environment ids (1 to 64 characters)`, x);
  return { environment_ids: [...new Set(v as string[])].sort() };
}

/** Whether an environment passes a subscription's `environment_ids` (every one when absent). */
export function environmentMatches(environmentId: string, f: { environment_ids?: readonly string[] }): boolean {
  return !f.environment_ids || f.environment_ids.includes(environmentId);
}

function poseFilters(f: Record<string, unknown>, at: string): PoseFilters {
  onlyKeys(f, at, ['environment_ids', 'min_confidence', 'person_ids', 'include_keypoints', 'include_dense_pose']);
  const mc = f.min_confidence;
  if (mc !== undefined && (typeof mc !== 'number' || !Number.isFinite(mc) || mc < 0 || mc > 1))
    throw bad(`${at}.min_confidence`, `${at}.min_confidence must be a number between 0 and 1`, mc);
  let ids: number[] | null = null;
  if (f.person_ids !== undefined) {
    const v = f.person_ids;
    if (!Array.isArray(v) || v.length === 0 || v.length > MAX_PERSON_IDS)
      throw bad(`${at}.person_ids`, `${at}.person_ids must be an array of 1 to ${MAX_PERSON_IDS} person ids`, v);
    for (const x of v)
      if (typeof x !== 'number' || !Number.isInteger(x) || x < 0 || x > 2 ** 31 - 1)
        throw bad(`${at}.person_ids`, `${at}.person_ids must hold non-negative integers`, x);
    ids = [...new Set(v as number[])].sort((a, b) => a - b);
  }
  return {
    ...environmentIds(f, at),
    min_confidence: (mc as number | undefined) ?? 0,
    person_ids: ids,
    include_keypoints: bool(f.include_keypoints, `${at}.include_keypoints`, true),
    include_dense_pose: bool(f.include_dense_pose, `${at}.include_dense_pose`, false),
  };
}

function alertFilters(f: Record<string, unknown>, at: string): AlertFilters {
  onlyKeys(f, at, ['environment_ids', 'alert_types', 'severity']);
  return {
    ...environmentIds(f, at),
    alert_types: choices(f.alert_types, `${at}.alert_types`, ALERT_TYPES),
    severity: choices(f.severity, `${at}.severity`, SEVERITIES),
  };
}

function eventFilters(f: Record<string, unknown>, at: string): EventFilters {
  onlyKeys(f, at, ['environment_ids', 'event_types', 'severity']);
  return {
    ...environmentIds(f, at),
    event_types: choices(f.event_types, `${at}.event_types`, EVENT_TYPES),
    severity: choices(f.severity, `${at}.severity`, SEVERITIES),
  };
}

/**
 * Reads one subscription: its channel, which must be one of `channels`, and its filters.
 * @param channel the channel as sent
 * @param filters the filters as sent (absent: every default)
 * @param channels the channels the caller takes (`/ws/pose`: pose_updates, alerts)
 * @param where the path of the subscription in the request ('' at the top; `subscriptions[0]`)
 * @returns the request, its filters normalised (defaults filled, lists sorted and distinct)
 * @throws ProtocolError naming the field at fault
 * @example readSubscription('alerts', { severity: ['critical'] }, ['alerts']).filters.alert_types // every type
 */
export function readSubscription(channel: unknown, filters: unknown, channels: readonly SubscriptionChannel[], where = ''): SubscribeRequest {
  const at = (f: string) => (where ? `${where}.${f}` : f);
  if (!channels.includes(channel as SubscriptionChannel)) throw bad(at('channel'), `${at('channel')} must be one of ${channels.join(', ')}`, channel);
  const f = filters ?? {};
  if (!isObject(f)) throw bad(at('filters'), `${at('filters')} must be an object`, f);
  switch (channel as SubscriptionChannel) {
    case 'pose_updates':
      return { channel: 'pose_updates', filters: poseFilters(f, at('filters')) };
    case 'alerts':
      return { channel: 'alerts', filters: alertFilters(f, at('filters')) };
    case 'events':
      return { channel: 'events', filters: eventFilters(f, at('filters')) };
  }
}

/** The rendering a pose subscription asks for. */
export function poseShape(f: PoseFilters, form: Form): FrameShape {
  return {
    form,
    minConfidence: f.min_confidence,
    includeKeypoints: f.include_keypoints,
    includeDensePose: f.include_dense_pose,
    ...(f.person_ids ? { personIds: f.person_ids } : {}),
  };
}

/** Whether an alert passes an alerts subscription's filters. */
export function alertMatches(a: PoseAlert, f: AlertFilters): boolean {
  return f.alert_types.includes(a.type) && f.severity.includes(a.severity) && environmentMatches(a.environmentId, f);
}

/** Whether an activity event passes an events subscription's filters. */
export function eventMatches(e: ActivityEvent, f: EventFilters): boolean {
  return f.event_types.includes(e.type) && f.severity.includes(e.severity) && environmentMatches(e.environmentId, f);
}
