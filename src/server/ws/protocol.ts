import { createHash } from 'node:crypto';
import type { AlertSeverity, PoseAlert } from '../../pose/types.js';
import type { Form } from '../../render/frame.js';
import type { FrameShape } from '../../render/view.js';
import type { ErrorCode } from '../../errors.js';
import { ZONE_SEVERITIES } from '../../config/schema.js';

/**
 * The `/ws/pose` protocol (spec "Events", DECISIONS "WebSocket"): what clients may send, how
 * their filters are read and normalised, and the ids of subscriptions. Pure: no sockets here.
 */

export const PROTOCOLS = ['pose_v1', 'alerts_v1'] as const;
export const CHANNELS = ['pose_updates', 'alerts'] as const;
export type Channel = (typeof CHANNELS)[number];
export const ALERT_TYPES: readonly PoseAlert['type'][] = ['fall_detection', 'inactivity', 'intrusion'];
export const SEVERITIES: readonly AlertSeverity[] = ZONE_SEVERITIES;
/** Most ids a `person_ids` filter may list. */
export const MAX_PERSON_IDS = 100;

/** A pose_updates subscription's filters with every default filled in (`filters_applied`). */
export interface PoseFilters {
  min_confidence: number;
  /** Sorted, distinct; null = every person. */
  person_ids: number[] | null;
  include_keypoints: boolean;
  include_dense_pose: boolean;
}

/** An alerts subscription's filters with every default filled in. */
export interface AlertFilters {
  /** Sorted, distinct. */
  alert_types: PoseAlert['type'][];
  severity: AlertSeverity[];
}

/** A subscription request, read and normalised. */
export type SubscribeRequest = { channel: 'pose_updates'; filters: PoseFilters } | { channel: 'alerts'; filters: AlertFilters };

/** A client message, read. */
export type ClientMessage = { type: 'subscribe'; request: SubscribeRequest } | { type: 'unsubscribe'; subscriptionId: string } | { type: 'ping' };

/** A client message that cannot be taken: answered with an `error` message, the connection stays. */
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

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function bad(field: string, message: string, received: unknown): ProtocolError {
  return new ProtocolError('VALIDATION_ERROR', message, { field, received_value: received === undefined ? null : received });
}

function onlyKeys(o: Record<string, unknown>, where: string, known: readonly string[]): void {
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

function poseFilters(f: Record<string, unknown>): PoseFilters {
  onlyKeys(f, 'filters', ['min_confidence', 'person_ids', 'include_keypoints', 'include_dense_pose']);
  const mc = f.min_confidence;
  if (mc !== undefined && (typeof mc !== 'number' || !Number.isFinite(mc) || mc < 0 || mc > 1))
    throw bad('filters.min_confidence', 'filters.min_confidence must be a number between 0 and 1', mc);
  let ids: number[] | null = null;
  if (f.person_ids !== undefined) {
    const v = f.person_ids;
    if (!Array.isArray(v) || v.length === 0 || v.length > MAX_PERSON_IDS)
      throw bad('filters.person_ids', `filters.person_ids must be an array of 1 to ${MAX_PERSON_IDS} person ids`, v);
    for (const x of v)
      if (typeof x !== 'number' || !Number.isInteger(x) || x < 0 || x > 2 ** 31 - 1)
        throw bad('filters.person_ids', 'filters.person_ids must hold non-negative integers', x);
    ids = [...new Set(v as number[])].sort((a, b) => a - b);
  }
  return {
    min_confidence: (mc as number | undefined) ?? 0,
    person_ids: ids,
    include_keypoints: bool(f.include_keypoints, 'filters.include_keypoints', true),
    include_dense_pose: bool(f.include_dense_pose, 'filters.include_dense_pose', false),
  };
}

function alertFilters(f: Record<string, unknown>): AlertFilters {
  onlyKeys(f, 'filters', ['alert_types', 'severity']);
  return {
    alert_types: choices(f.alert_types, 'filters.alert_types', ALERT_TYPES),
    severity: choices(f.severity, 'filters.severity', SEVERITIES),
  };
}

/**
 * Reads one client message (its JSON already parsed).
 * @param m the parsed message
 * @returns the message, its filters normalised (defaults filled, lists sorted and distinct)
 * @throws ProtocolError naming the field at fault
 * @example readMessage({ type: 'subscribe', channel: 'alerts', filters: { severity: ['critical'] } })
 */
export function readMessage(m: unknown): ClientMessage {
  if (!isObject(m)) throw bad('', 'a message is a JSON object with a "type"', m);
  const type = m.type;
  switch (type) {
    case 'subscribe': {
      onlyKeys(m, '', ['type', 'channel', 'filters']);
      const channel = m.channel;
      if (!CHANNELS.includes(channel as Channel)) throw bad('channel', `channel must be one of ${CHANNELS.join(', ')}`, channel);
      const filters = m.filters ?? {};
      if (!isObject(filters)) throw bad('filters', 'filters must be an object', filters);
      return channel === 'pose_updates'
        ? { type, request: { channel, filters: poseFilters(filters) } }
        : { type, request: { channel: 'alerts', filters: alertFilters(filters) } };
    }
    case 'unsubscribe': {
      onlyKeys(m, '', ['type', 'subscription_id']);
      const id = m.subscription_id;
      if (typeof id !== 'string' || id.length === 0 || id.length > 64)
        throw bad('subscription_id', 'subscription_id must be the id a subscription_confirmed gave', id);
      return { type, subscriptionId: id };
    }
    case 'ping':
      onlyKeys(m, '', ['type']);
      return { type };
    default:
      throw bad('type', 'type must be one of subscribe, unsubscribe, ping', type);
  }
}

/**
 * The id of a subscription. Slot 1 is the filter set's own id, the same for every subscription of
 * one channel with equal filters in one form, so that connections with equal filters share one
 * topic and one serialised message. A connection subscribing again with equal filters gets the
 * next slot, so that each of its subscriptions has an id of its own.
 * @param r the normalised request
 * @param form the connection's response form
 * @param slot 1 for the filter set's own id, 2 and up for further equal subscriptions on one connection
 * @returns `sub_` and 16 hex digits
 */
export function subscriptionId(r: SubscribeRequest, form: Form, slot = 1): string {
  const h = createHash('sha256')
    .update(`${r.channel}|${form}|${JSON.stringify(r.filters)}${slot > 1 ? `|${slot}` : ''}`)
    .digest('hex');
  return `sub_${h.slice(0, 16)}`;
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
  return f.alert_types.includes(a.type) && f.severity.includes(a.severity);
}
