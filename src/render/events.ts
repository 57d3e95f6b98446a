import type { ActivityEvent, PoseAlert } from '../pose/types.js';
import { isoTime } from '../csi/frame.js';

function r3(v: number): number {
  return Math.round(v * 1000) / 1000;
}

function location(l: { x: number; y: number }): { x: number; y: number } {
  return { x: r3(l.x), y: r3(l.y) };
}

/**
 * An activity event in the spec's shape (Form B "Activity event"; `/analytics/events`, MQTT
 * `events`, NDJSON `events`): snake_case, timestamps ISO 8601, location metres on the floor plan.
 * @param e the event as the alerts operator recorded it
 * @returns the JSON object
 * @example renderEvent(e).event_id // 'evt_default_3_1732473600000_fall'
 */
export function renderEvent(e: ActivityEvent): Record<string, unknown> {
  return {
    event_id: e.eventId,
    type: e.type,
    severity: e.severity,
    timestamp: isoTime(e.time),
    environment_id: e.environmentId,
    person_id: e.personId,
    track_id: e.trackId,
    confidence: r3(e.confidence),
    location: location(e.location),
    metadata: e.metadata,
    actions_taken: e.actionsTaken,
  };
}

/**
 * An alert as the WebSocket `alert` message of the spec (also MQTT `alerts` and NDJSON
 * `alerts`): `alert_id`, `timestamp`, `alert_type`, `severity`, `data` {person_id, track_id,
 * location, confidence, video_clip_url, zone, environment_id, metadata}, `actions_required`. There is
 * no camera, so `video_clip_url` is null.
 * @param a the alert as the alerts operator raised it
 * @returns the JSON object, `type: "alert"` first
 */
export function renderAlert(a: PoseAlert): Record<string, unknown> {
  return {
    type: 'alert',
    alert_id: a.alertId,
    timestamp: isoTime(a.time),
    alert_type: a.type,
    severity: a.severity,
    data: {
      person_id: a.personId,
      track_id: a.trackId,
      environment_id: a.environmentId,
      location: location(a.location),
      confidence: r3(a.confidence),
      video_clip_url: null,
      ...(a.zone !== undefined ? { zone: a.zone } : {}),
      metadata: a.metadata,
    },
    actions_required: a.actionsRequired,
  };
}
