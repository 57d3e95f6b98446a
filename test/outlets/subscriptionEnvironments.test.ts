/**
 * The `environment_ids` filter every subscription channel takes (`/ws/pose` and webhooks read
 * subscriptions with the same code): read sorted and distinct, absent when not given (the filters
 * applied read as before it existed), refused when malformed, and matched on alerts and events.
 */
import { describe, expect, it } from 'vitest';
import { alertMatches, eventMatches, MAX_ENVIRONMENT_IDS, ProtocolError, readSubscription } from '../../src/outlets/subscriptions.js';
import type { ActivityEvent, PoseAlert } from '../../src/pose/types.js';

const ALL = ['pose_updates', 'alerts', 'events'] as const;

describe('environment_ids in a subscription', () => {
  it.each(ALL)('%s: read sorted and distinct; absent when not given', (channel) => {
    expect(readSubscription(channel, { environment_ids: ['ward-b', 'ward-a', 'ward-b'] }, ALL).filters.environment_ids).toEqual(['ward-a', 'ward-b']);
    expect('environment_ids' in readSubscription(channel, {}, ALL).filters).toBe(false);
  });

  it.each([
    ['an empty list', []],
    ['not a list', 'ward-a'],
    ['an empty id', ['']],
    ['a number', [7]],
    ['an id of 65 characters', ['x'.repeat(65)]],
    ['too many ids', Array.from({ length: MAX_ENVIRONMENT_IDS + 1 }, (_, i) => `room-${i}`)],
  ])('refuses %s, naming the field', (_what, v) => {
    const e = (() => {
      try {
        readSubscription('alerts', { environment_ids: v }, ALL);
      } catch (x) {
        return x;
      }
      return undefined;
    })();
    expect(e).toBeInstanceOf(ProtocolError);
    expect((e as ProtocolError).details.field).toBe('filters.environment_ids');
  });

  it('matches alerts and events of the listed rooms only', () => {
    const alert = { type: 'fall_detection', severity: 'high', environmentId: 'ward-a' } as PoseAlert;
    const event = { type: 'fall_detection', severity: 'high', environmentId: 'ward-a' } as ActivityEvent;
    const a = (ids?: string[]) => readSubscription('alerts', ids ? { environment_ids: ids } : {}, ALL).filters as Parameters<typeof alertMatches>[1];
    const e = (ids?: string[]) => readSubscription('events', ids ? { environment_ids: ids } : {}, ALL).filters as Parameters<typeof eventMatches>[1];
    expect([alertMatches(alert, a()), alertMatches(alert, a(['ward-a'])), alertMatches(alert, a(['ward-b']))]).toEqual([true, true, false]);
    expect([eventMatches(event, e()), eventMatches(event, e(['ward-a', 'x'])), eventMatches(event, e(['ward-b']))]).toEqual([true, true, false]);
  });
});
