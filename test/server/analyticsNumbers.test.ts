/**
 * DECISIONS "Numbers are numbers": every field the spec types as a number is a number in every
 * response, never null. This walks the spec (../shared/spec/pose-service-interface.md) resource
 * by resource: analytics (healthcare, retail, security, summary, events, occupancy), history
 * (both forms), the pose query, a track, system status, detailed health and metrics; each over a
 * real store filled with the ground-truth scenarios of the analytics tests (a shop with zones and
 * intrusions, a fall with a recovery) and over periods that hold nothing, in both response forms,
 * through the real server.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDirs } from '../helpers/dataDir.js';
import type { TestServer } from '../helpers/server.js';
import { shopScenario, startShopServer, type TruthRun } from '../helpers/truthStore.js';

const DAY = new Date(Date.now() - 2 * 86_400_000).toISOString().slice(0, 10);
const T0 = Date.parse(`${DAY}T12:00:00.000Z`);
const HOUR = 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString();
/** A day and an hour that hold nothing. */
const EMPTY_DAY = '2020-01-01';
const EMPTY = { start_time: '2020-01-01T00:00:00Z', end_time: '2020-01-01T01:00:00Z' };

const shop = shopScenario();
let s: TestServer;
let token: string;
let shopRun: TruthRun;
const tempDir = tempDirs('csipose-numbers-');

beforeAll(async () => {
  ({ s, token, shopRun } = await startShopServer(tempDir(), shop, T0, 'shop', { rateLimitScale: 100 }));
});
afterAll(() => s?.close());

/**
 * The values at a path: `a.b` walks objects, `a[].b` every item of an array, `a?.b` skips an
 * object that is null (a field the spec types as an object that may be absent, e.g. a location
 * not known).
 */
function valuesAt(root: unknown, path: string): Array<{ at: string; v: unknown }> {
  let cur: Array<{ at: string; v: unknown }> = [{ at: '', v: root }];
  for (const raw of path.split('.')) {
    const optional = raw.endsWith('?');
    const name = optional ? raw.slice(0, -1) : raw;
    const each = name.endsWith('[]');
    const key = each ? name.slice(0, -2) : name;
    const next: Array<{ at: string; v: unknown }> = [];
    for (const { at, v } of cur) {
      const x = key === '' ? v : (v as Record<string, unknown> | null | undefined)?.[key];
      const here = key === '' ? at : `${at}.${key}`;
      if (optional && x === null) continue;
      if (each) {
        expect(Array.isArray(x), `${here} is an array`).toBe(true);
        (x as unknown[]).forEach((item, i) => next.push({ at: `${here}[${i}]`, v: item }));
      } else next.push({ at: here, v: x });
    }
    cur = next;
  }
  return cur;
}

/** Expects every value at every path to be a finite number; returns how many were checked. */
function expectNumbers(what: string, body: unknown, paths: readonly string[]): number {
  let n = 0;
  for (const p of paths) {
    for (const { at, v } of valuesAt(body, p)) {
      expect(typeof v === 'number' && Number.isFinite(v), `${what}: ${at} = ${JSON.stringify(v)}`).toBe(true);
      n++;
    }
  }
  return n;
}

/** GET in both forms; returns the resource of each (Form B `data`, Form A the body). */
async function both(path: string, query: Record<string, string | number>): Promise<Array<{ form: 'a' | 'b'; body: unknown; raw: { pagination?: unknown } }>> {
  const out = [];
  for (const form of ['a', 'b'] as const) {
    const r = await s.api('GET', path, { token, form, query });
    expect(r.status, `${form} ${path} ${JSON.stringify(query)}: ${r.text.slice(0, 300)}`).toBe(200);
    out.push({ form, body: form === 'b' ? r.body.data : r.body, raw: r.body });
  }
  return out;
}

const HEALTHCARE = [
  'fall_events.count',
  'fall_events.events[].response_time_seconds',
  'fall_events.events[].location?.x',
  'fall_events.events[].location?.y',
  'activity_summary.walking_minutes',
  'activity_summary.sitting_minutes',
  'activity_summary.lying_minutes',
  'activity_summary.standing_minutes',
  'mobility_score',
  'sleep_quality.total_sleep_hours',
  'sleep_quality.sleep_efficiency',
  'sleep_quality.restlessness_events',
];
const RETAIL = [
  'traffic.total_visitors',
  'traffic.unique_visitors',
  'traffic.peak_count',
  'traffic.average_dwell_time_minutes',
  'zones[].visitor_count',
  'zones[].avg_dwell_time_minutes',
  'zones[].conversion_rate',
  'conversion_funnel.entrance',
  'conversion_funnel.product_interaction',
  'conversion_funnel.checkout_area',
  'conversion_funnel.purchase',
  'heat_map.high_traffic_areas[].intensity',
];
const SECURITY = [
  'intrusion_events.count',
  'intrusion_events.events[].person_count',
  'intrusion_events.events[].response_time_seconds',
  'perimeter_monitoring.total_detections',
  'perimeter_monitoring.authorized_entries',
  'perimeter_monitoring.unauthorized_attempts',
  'perimeter_monitoring.false_positives',
  'crowd_analysis.max_occupancy',
  'crowd_analysis.average_occupancy',
  'crowd_analysis.crowd_formation_events',
];
const SUMMARY = [
  'time_period.duration_hours',
  'detection_stats.total_detections',
  'detection_stats.unique_persons',
  'detection_stats.average_confidence',
  'detection_stats.peak_occupancy',
  'activity_stats.total_movement_events',
  'activity_stats.fall_detections',
  'activity_stats.alert_count',
  'activity_stats.average_activity_level',
  'system_stats.uptime_percentage',
  'system_stats.average_processing_time',
  'system_stats.frames_processed',
  'system_stats.error_count',
  'hourly_breakdown[].detections',
  'hourly_breakdown[].unique_persons',
  'hourly_breakdown[].average_confidence',
];
const EVENT = ['person_id', 'track_id', 'confidence', 'location?.x', 'location?.y'];
const OCCUPANCY = [
  'summary.average_occupancy',
  'summary.peak_occupancy',
  'summary.total_person_hours',
  'time_series[].occupancy',
  'time_series[].confidence',
  'distribution.0_persons',
  'distribution.1_person',
  'distribution.2_persons',
  'distribution.3_persons',
  'distribution.4_plus_persons',
];

describe('analytics: every spec-typed number is a number, with data and without', () => {
  it('healthcare, retail and security on the day of the data and on a day without any', async () => {
    for (const date of [DAY, EMPTY_DAY]) {
      for (const r of await both('/analytics/healthcare', { date })) expectNumbers(`healthcare ${date} ${r.form}`, r.body, HEALTHCARE);
      for (const r of await both('/analytics/retail', { date })) expectNumbers(`retail ${date} ${r.form}`, r.body, RETAIL);
      for (const r of await both('/analytics/security', { date })) expectNumbers(`security ${date} ${r.form}`, r.body, SECURITY);
    }
    // The data day has falls, zones and intrusions, so the lists above were walked, not empty.
    const [h] = await both('/analytics/healthcare', { date: DAY });
    expect((h!.body as { fall_events: { count: number } }).fall_events.count).toBeGreaterThan(0);
    const [sec] = await both('/analytics/security', { date: DAY });
    expect((sec!.body as { intrusion_events: { count: number } }).intrusion_events.count).toBeGreaterThan(0);
  });

  it('summary and occupancy over the data, over an hour without data inside a range with data, and over nothing', async () => {
    const ranges = [{ start_time: iso(T0 - HOUR), end_time: iso(T0 + 2 * HOUR) }, EMPTY];
    for (const q of ranges) {
      for (const r of await both('/analytics/summary', q)) {
        const n = expectNumbers(`summary ${JSON.stringify(q)} ${r.form}`, r.body, SUMMARY);
        expect(n).toBeGreaterThan(SUMMARY.length - 3);
      }
      for (const r of await both('/analytics/occupancy', { ...q, interval: '5min' }))
        expectNumbers(`occupancy ${JSON.stringify(q)} ${r.form}`, r.body, OCCUPANCY);
    }
    // The first range's first hour is empty: its bucket is in the breakdown, with numbers.
    const [sum] = await both('/analytics/summary', ranges[0]!);
    expect((sum!.body as { hourly_breakdown: unknown[] }).hourly_breakdown[0]).toMatchObject({ detections: 0, unique_persons: 0, average_confidence: 0 });
  });

  it('events of every kind, in both forms', async () => {
    for (const event_type of ['fall', 'alert', 'activity', 'intrusion']) {
      for (const r of await both('/analytics/events', { event_type })) {
        const items = (r.form === 'a' ? (r.body as { events: unknown }).events : r.body) as unknown[];
        expect(items.length, event_type).toBeGreaterThan(0);
        expectNumbers(
          `events ${event_type} ${r.form}`,
          { items },
          EVENT.map((p) => `items[].${p}`),
        );
        expectNumbers(
          `events pagination ${r.form}`,
          r.raw.pagination,
          r.form === 'a' ? ['total_count', 'returned_count'] : ['page', 'per_page', 'total', 'total_pages'],
        );
      }
    }
  });
});

describe('history, query and tracks: every spec-typed number is a number', () => {
  const range = () => ({ start_time: iso(T0), end_time: iso(T0 + HOUR) });
  const PERSON_B = [
    'frame_id',
    'person_id',
    'track_id',
    'confidence',
    'bounding_box.x',
    'bounding_box.y',
    'bounding_box.width',
    'bounding_box.height',
    'keypoints[].x',
    'keypoints[].y',
    'keypoints[].confidence',
  ];

  it('Form B history records and Form A history frames', async () => {
    const b = await s.api('GET', '/pose/history', { token, query: { ...range(), per_page: 200 } });
    expect(b.status, b.text).toBe(200);
    expectNumbers(
      'history B',
      b.body,
      PERSON_B.map((p) => `data[].${p}`),
    );
    expectNumbers('history B pagination', b.body.pagination, ['page', 'per_page', 'total', 'total_pages']);
    const a = await s.api('GET', '/pose/history', { token, form: 'a', query: { ...range(), limit: 100 } });
    expect(a.status, a.text).toBe(200);
    expectNumbers('history A', a.body, [
      'poses[].frame_id',
      'poses[].persons[].id',
      'poses[].persons[].confidence',
      'poses[].persons[].bounding_box.x',
      'poses[].persons[].bounding_box.width',
      'poses[].persons[].keypoints[].x',
      'poses[].persons[].keypoints[].confidence',
      'pagination.total_count',
      'pagination.returned_count',
    ]);
  });

  it('the pose query, with buckets that hold no person above the threshold', async () => {
    for (const form of ['a', 'b'] as const) {
      const r = await s.api('POST', '/pose/query', {
        token,
        form,
        body: {
          query: {
            time_range: { start: iso(T0 - HOUR), end: iso(T0 + HOUR) },
            filters: { confidence: { min: 0.99 } },
            aggregation: { type: 'minute_summary' },
          },
        },
      });
      expect(r.status, r.text).toBe(200);
      const body = form === 'a' ? r.body : r.body.data;
      expect(body.results.length).toBeGreaterThan(0);
      expectNumbers(`query ${form}`, body, [
        'results[].person_count',
        'results[].avg_confidence',
        'query_metadata.execution_time_ms',
        'query_metadata.total_records_scanned',
      ]);
    }
  });

  it('a track with its trajectory', async () => {
    const id = [...shopRun.tracksOf.values()][0]!.values().next().value as number;
    for (const r of await both(`/pose/tracking/${id}`, { include_trajectory: 'true' })) {
      expectNumbers(`track ${r.form}`, r.body, [
        'track_id',
        'person_id',
        'duration_seconds',
        'total_frames',
        'average_confidence',
        'statistics.movement_distance',
        'statistics.average_speed',
        'statistics.time_stationary',
        'statistics.time_moving',
        'trajectory[].center_x',
        'trajectory[].center_y',
        'trajectory[].confidence',
      ]);
    }
  });
});

describe('status, health and metrics: every spec-typed number is a number', () => {
  it('system status in both forms, detailed health and metrics', async () => {
    const a = await s.api('GET', '/system/status', { token, form: 'a' });
    expectNumbers('status A', a.body, [
      'uptime_seconds',
      'components.csi_receiver.data_rate_hz',
      'components.csi_receiver.packet_loss_rate',
      'components.neural_network.inference_time_ms',
      'components.neural_network.gpu_utilization',
      'components.tracking.active_tracks',
      'components.tracking.track_quality',
      'hardware.cpu_usage',
      'hardware.memory_usage',
      'hardware.gpu_memory_usage',
      'hardware.disk_usage',
      'network.connected_routers',
      'network.signal_strength',
      'network.interference_level',
    ]);
    const b = await s.api('GET', '/system/status', { token, form: 'b' });
    expectNumbers('status B', b.body.data, [
      'uptime_seconds',
      'performance.frames_processed',
      'performance.average_fps',
      'performance.average_latency_ms',
      'performance.cpu_usage',
      'performance.memory_usage',
      'performance.gpu_usage',
      'components.neural_network.inference_queue_size',
      'components.tracker.active_tracks',
    ]);
    for (const r of await both('/health/detailed', {})) {
      expectNumbers(`health ${r.form}`, r.body, [
        'uptime',
        'components.api.response_time_ms',
        'components.api.requests_per_second',
        'components.database.query_time_ms',
        'components.redis.connected_clients',
        'components.neural_network.inference_queue',
        'components.csi_processor.data_rate',
        'metrics.cpu_usage',
        'metrics.memory_usage',
        'metrics.disk_usage',
        'metrics.network_io.bytes_in',
        'metrics.network_io.bytes_out',
      ]);
    }
    for (const r of await both('/metrics', {})) {
      expectNumbers(`metrics ${r.form}`, r.body, [
        'current.performance.frames_per_second',
        'current.performance.average_latency_ms',
        'current.performance.processing_queue_size',
        'current.performance.error_rate',
        'current.resources.cpu_usage',
        'current.resources.memory_usage',
        'current.resources.gpu_usage',
        'current.resources.disk_io.read_mb_per_sec',
        'current.resources.disk_io.write_mb_per_sec',
        'current.business.active_persons',
        'current.business.detections_per_minute',
        'current.business.tracking_accuracy',
        'historical[].frames_per_second',
        'historical[].average_latency_ms',
        'historical[].cpu_usage',
      ]);
    }
  });
});
