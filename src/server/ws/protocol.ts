import { createHash } from 'node:crypto';
import type { Form } from '../../render/frame.js';
import {
  bad,
  isObject,
  onlyKeys,
  readSubscription,
  type AlertFilters,
  type PoseFilters,
  type SubscribeRequest as AnySubscribeRequest,
} from '../../outlets/subscriptions.js';

export {
  ALERT_TYPES,
  alertMatches,
  environmentMatches,
  MAX_PERSON_IDS,
  poseShape,
  ProtocolError,
  SEVERITIES,
  type AlertFilters,
  type PoseFilters,
} from '../../outlets/subscriptions.js';

/**
 * The `/ws/pose` protocol (spec "Events", DECISIONS "WebSocket"): what clients may send and the
 * ids of subscriptions. Channels and filters are read and matched by src/outlets/subscriptions.ts,
 * which the webhooks share. Pure: no sockets here.
 */

export const PROTOCOLS = ['pose_v1', 'alerts_v1'] as const;
export const CHANNELS = ['pose_updates', 'alerts'] as const;
export type Channel = (typeof CHANNELS)[number];

/** A subscription request of `/ws/pose`, read and normalised. */
export type SubscribeRequest = { channel: 'pose_updates'; filters: PoseFilters } | { channel: 'alerts'; filters: AlertFilters };

/** A client message, read. */
export type ClientMessage = { type: 'subscribe'; request: SubscribeRequest } | { type: 'unsubscribe'; subscriptionId: string } | { type: 'ping' };

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
      // Only the channels of CHANNELS are read, so the request is one of this protocol's.
      const request = readSubscription(m.channel, m.filters, CHANNELS) as Exclude<AnySubscribeRequest, { channel: 'events' }>;
      return { type, request };
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
