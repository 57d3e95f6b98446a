import { describe, expect, it } from 'vitest';
import { toJsonLine } from '../../src/render/json.js';
import { renderAlert, renderEvent } from '../../src/render/events.js';
import type { ActivityEvent, PoseAlert, PoseFrame } from '../../src/pose/types.js';

const T = Date.parse('2026-11-24T10:00:00.000Z');

const event: ActivityEvent = {
  eventId: 'evt_default_3_1795514400000_fall',
  type: 'fall_detection',
  severity: 'high',
  time: T,
  environmentId: 'default',
  personId: 3,
  trackId: 3,
  confidence: 0.87654,
  location: { x: 1.23456, y: 2.5 },
  metadata: { fall_duration: 1.2, impact_severity: 'moderate', recovery_detected: false },
  actionsTaken: ['alert_sent', 'notification_dispatched'],
};

const alert: PoseAlert = {
  alertId: 'alrt_default_3_1795514400000_fall',
  type: 'fall_detection',
  severity: 'high',
  time: T,
  environmentId: 'default',
  personId: 3,
  trackId: 3,
  confidence: 0.87654,
  location: { x: 1.23456, y: 2.5 },
  metadata: { down_seconds: 5 },
  actionsRequired: ['medical_response', 'notification'],
};

describe("events and alerts on the wire: the spec's snake_case shapes", () => {
  it('renders an activity event as /analytics/events items are', () => {
    expect(renderEvent(event)).toEqual({
      event_id: event.eventId,
      type: 'fall_detection',
      severity: 'high',
      timestamp: '2026-11-24T10:00:00.000Z',
      environment_id: 'default',
      person_id: 3,
      track_id: 3,
      confidence: 0.877,
      location: { x: 1.235, y: 2.5 },
      metadata: event.metadata,
      actions_taken: ['alert_sent', 'notification_dispatched'],
    });
  });

  it('renders an alert as the WebSocket alert message', () => {
    expect(renderAlert(alert)).toEqual({
      type: 'alert',
      alert_id: alert.alertId,
      timestamp: '2026-11-24T10:00:00.000Z',
      alert_type: 'fall_detection',
      severity: 'high',
      data: {
        person_id: 3,
        track_id: 3,
        environment_id: 'default',
        location: { x: 1.235, y: 2.5 },
        confidence: 0.877,
        video_clip_url: null,
        metadata: { down_seconds: 5 },
      },
      actions_required: ['medical_response', 'notification'],
    });
  });

  it('NDJSON pose frames carry them in the same style as the poses, never camelCase', () => {
    const frame: PoseFrame = {
      frameId: 7,
      time: T,
      sourceId: 's',
      environmentId: 'default',
      persons: [],
      processingMs: 1,
      modelVersion: 'm',
      csiQuality: 1,
      events: [event],
      alerts: [alert],
    };
    const line = toJsonLine(frame);
    const o = JSON.parse(line);
    expect(o.events).toEqual([renderEvent(event)]);
    expect(o.alerts).toEqual([renderAlert(alert)]);
    expect(line).not.toMatch(/"[a-z]+[A-Z][A-Za-z]*":/);
  });
});
