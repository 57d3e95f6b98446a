import { describe, expect, it } from 'vitest';
import { CONFIG_PARAMS, liveParams, liveParamsOf, settingsOf } from '../../pipelines/settings.js';
import { OPERATORS } from '../../operators/index.js';
import { configParam } from '../../src/config/params.js';
import type { OperatorSpec, StreamKind } from '../../src/engine/spec.js';
import { map } from 'rxjs';
import { live } from '../../pipelines/live.js';
import { processDef } from '../../pipelines/process.js';
import { registry } from '../../pipelines/index.js';
import { resolveStages } from '../../src/engine/pipeline.js';
import { deepFreeze, defaults, fieldAt, type ServiceConfig } from '../../src/config/schema.js';
import type { ConfigSnapshot } from '../../src/config/store.js';
import { describePipelines } from '../../src/cli/describe.js';

const frozen = (c: ServiceConfig) => deepFreeze(c) as ConfigSnapshot;

describe('one definition of each setting', () => {
  it('declares every configuration-backed operator parameter with the type, default and range of its setting', () => {
    for (const [op, params] of Object.entries(CONFIG_PARAMS)) {
      const spec = registry.operators.get(op);
      expect(spec, op).toBeDefined();
      for (const [name, path] of Object.entries(params)) {
        const p = spec!.params.find((x) => x.name === name);
        const f = fieldAt(path);
        expect(p, `${op}.${name}`).toBeDefined();
        expect(f, path).toBeDefined();
        expect(p!.default, `${op}.${name} default`).toBe(f!.default);
        if (f!.type === 'number' || f!.type === 'integer') {
          expect(p!.type).toBe(f!.type === 'integer' ? 'int' : 'number');
          expect([p!.min, p!.max], `${op}.${name} range`).toEqual([f!.minimum, f!.maximum]);
        } else expect(p!.type).toBe('boolean');
      }
    }
  });

  it('maps a configuration onto the stages: scalars, the site as its compact string, zones as JSON', () => {
    const c = defaults();
    c.detection.confidence_threshold = 0.65;
    c.detection.max_persons = 2;
    c.detection.tracking_enabled = false;
    c.alerts.fall_detection.sensitivity = 0.3;
    const radio = (id: string, role: 'tx' | 'rx', x: number, y: number, z: number) => ({
      id,
      role,
      x,
      y,
      z,
      yaw_deg: 90,
      antennas: 3,
      spacing_m: 0.029,
      format: 'intel5300' as const,
    });
    // The primary link is the tx and the FIRST rx: rx2 is not read by the one-link model.
    c.environment.site = {
      known: true,
      room_width: 7,
      room_depth: 5,
      radios: [radio('tx', 'tx', 6, 4.5, 1.3), radio('rx1', 'rx', 1, 0.2, 1.1), radio('rx2', 'rx', 0.1, 2, 1)],
    };
    c.environment.zones = [
      {
        id: 'bed',
        polygon: [
          [0, 0],
          [1, 0],
          [1, 1],
        ],
      },
    ] as never;
    const snapshot = frozen(c);
    const p = liveParams(snapshot);
    expect(p.infer).toMatchObject({ confidenceThreshold: 0.65, maxPersons: 2, site: '7,5,1,0.2,1.1,6,4.5,1.3', receiverX: 1, receiverY: 0.2 });
    expect(p.track.enabled).toBe(false);
    expect(p.refine).toMatchObject({ confidenceThreshold: 0.65, maxPersons: 2 });
    expect(p.floorMap).toEqual({ roomWidth: 7, roomDepth: 5 });
    expect(p.alerts.sensitivity).toBe(0.3);
    expect(JSON.parse(String(p.alerts.zones))).toEqual(c.environment.zones);
    // One snapshot, one object: stages read it per frame without allocating.
    expect(liveParams(snapshot)).toBe(p);
    // Every value is one the stage accepts.
    for (const op of Object.keys(p) as Array<keyof typeof p>) {
      const stage = { name: op, params: Object.fromEntries(Object.entries(p[op]).map(([k, v]) => [k, String(v)])), text: op, column: 0 };
      const kinds: Readonly<Record<string, StreamKind>> = {
        infer: 'features',
        refine: 'floormap',
        floorMap: 'frame',
        track: 'pose',
        activity: 'pose',
        alerts: 'pose',
      };
      expect(() => resolveStages([stage], kinds[op], registry)).not.toThrow();
    }
  });
});

describe('one definition of each pipeline', () => {
  it('the live and process pipelines are the stage lists csipose pipelines prints', () => {
    const printed = JSON.parse(describePipelines(registry, true)) as Array<{ name: string; stages: unknown }>;
    for (const def of [live, processDef]) {
      // What the command prints is the definition the service composes (pipelines/build.ts).
      expect(printed.find((p) => p.name === def.name)?.stages, def.name).toEqual(JSON.parse(JSON.stringify(def.stages)));
      const resolved = resolveStages([{ name: def.name, params: {}, text: def.name, column: 0 }], 'frame', registry).resolved.map((s) => s.spec.name);
      expect(resolved).toEqual(def.stages.map(([n]) => n));
    }
    expect(live.stages.map(([n]) => n)).toEqual(['links', 'sanitize', 'window', 'features', 'infer', 'track', 'activity', 'alerts']);
  });

  it('reads which setting feeds which parameter from the operators themselves (configParam names it)', () => {
    const view = {
      viewWidth: 'environment.view.width',
      viewHeight: 'environment.view.height',
      viewHfovDeg: 'environment.view.hfov_deg',
      viewX: 'environment.view.x',
      viewY: 'environment.view.y',
      viewZ: 'environment.view.z',
      viewYawDeg: 'environment.view.yaw_deg',
      viewPitchDeg: 'environment.view.pitch_deg',
    };
    // The table the live pipeline was fed from when it was written out by hand (issue 20).
    expect(CONFIG_PARAMS).toEqual({
      infer: {
        confidenceThreshold: 'detection.confidence_threshold',
        maxPersons: 'detection.max_persons',
        batchSize: 'neural_network.batch_size',
        maxWaitMs: 'neural_network.max_wait_ms',
        ...view,
      },
      refine: { confidenceThreshold: 'detection.confidence_threshold', maxPersons: 'detection.max_persons', ...view },
      floorMap: { roomWidth: 'environment.site.room_width', roomDepth: 'environment.site.room_depth' },
      track: { enabled: 'detection.tracking_enabled', minHits: 'detection.tracking_min_hits', maxAge: 'detection.tracking_max_age' },
      activity: { enabled: 'analytics.enable_activity_recognition' },
      alerts: {
        fallDetection: 'alerts.fall_detection.enabled',
        sensitivity: 'alerts.fall_detection.sensitivity',
        notificationDelaySeconds: 'alerts.fall_detection.notification_delay_seconds',
        inactivity: 'alerts.inactivity_detection.enabled',
        thresholdMinutes: 'alerts.inactivity_detection.threshold_minutes',
      },
    });
  });

  it('feeds a new operator setting from its declaration alone: one place to add it', () => {
    // An operator of its own with one parameter declared from a setting, registered nowhere else.
    const fake: OperatorSpec = {
      name: 'fakeLimit',
      summary: 'caps the persons of a frame',
      input: 'pose',
      output: 'pose',
      params: [{ name: 'limit', ...configParam('detection.max_persons'), description: 'the cap' }],
      create: () => map((f) => f),
    };
    const settings = settingsOf([...OPERATORS, fake]);
    expect(settings.fakeLimit).toEqual({ limit: 'detection.max_persons' });
    const c = defaults();
    c.detection.max_persons = 3;
    expect(liveParamsOf(frozen(c), settings).fakeLimit).toEqual({ limit: 3 });
    // A parameter without a setting is not fed.
    expect(settingsOf([{ ...fake, params: [{ name: 'limit', type: 'int', default: 1, description: 'the cap' }] }])).toEqual({});
  });
});
