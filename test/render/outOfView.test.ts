/**
 * A person outside the reference view (issue 17, item 5; docs/service.md "Reference view"): the
 * WiFi sees the whole room, the view does not. Such a person keeps its place in `persons` (track,
 * confidence, activity, `location`, 17 keypoints at confidence 0) but has no `bounding_box`, never
 * the empty box [0, 0, 0, 0], and carries `in_view: false`; a person in view has `in_view: true`
 * and a box of at least 4 x 4 pixels inside the view.
 *
 * First the renderings themselves, of persons projected through the real camera (in view, behind
 * it, far to its side); then the live service with a view that sees nobody: the WebSocket in both
 * forms, `GET /pose/latest`, the MQTT `pose` topic (and Home Assistant's count), and the stored
 * history read back in both forms.
 */
import mqtt, { type MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BBOX_MIN_PAD_PX, Camera, DEFAULT_VIEW, viewCamera } from '../../src/pose/camera.js';
import { renderFrame, renderPerson, type Form } from '../../src/render/frame.js';
import { PoseFrameView } from '../../src/render/view.js';
import type { PersonPose, PoseFrame } from '../../src/pose/types.js';
import { mosquittoPath, startBroker, type Broker } from '../helpers/mosquitto.js';
import { startServer, until, type TestServer } from '../helpers/server.js';
import { WsClient } from '../helpers/wsClient.js';
import type { WireFrame, WirePerson } from '../helpers/wire.js';

/** Joint offsets of a standing adult: across (m, +x) and height (m), COCO-17 order. */
const STANDING: ReadonlyArray<readonly [number, number]> = [
  [0, 1.62],
  [-0.03, 1.65],
  [0.03, 1.65],
  [-0.07, 1.63],
  [0.07, 1.63],
  [-0.19, 1.42],
  [0.19, 1.42],
  [-0.22, 1.12],
  [0.22, 1.12],
  [-0.23, 0.85],
  [0.23, 0.85],
  [-0.1, 0.92],
  [0.1, 0.92],
  [-0.1, 0.5],
  [0.1, 0.5],
  [-0.1, 0.08],
  [0.1, 0.08],
];

/**
 * A standing person at a floor position as the v2 decoder makes one (src/model/runtime.ts): the
 * skeleton projected through the camera, confidence 0 for keypoints outside the view, the box of
 * the keypoints in view (`Camera.bbox`).
 */
function personAt(cam: Camera, x: number, y: number, trackId: number): PersonPose {
  const k3 = new Float32Array(51);
  STANDING.forEach(([dx, z], j) => k3.set([x + dx, y, z], 3 * j));
  const px = new Float64Array(34);
  const vis = new Uint8Array(17);
  cam.projectKeypoints(k3, px, vis);
  const kp = new Float32Array(51);
  for (let j = 0; j < 17; j++) {
    const u = px[2 * j]!;
    const v = px[2 * j + 1]!;
    const finite = Number.isFinite(u) && Number.isFinite(v);
    kp.set([finite ? u : 0, finite ? v : 0, vis[j] ? 0.9 : 0], 3 * j);
  }
  return {
    slot: trackId - 1,
    trackId,
    trackAge: 10,
    confidence: 0.9,
    keypoints: kp,
    bbox: Float32Array.from(cam.bbox(px, vis)),
    floor: { x, y },
    keypoints3d: k3,
    activity: 'standing',
    velocity: { x: 0, y: 0 },
  };
}

/** What every rendered person must be, in either form: in view with a real box, or out of view with none. */
function expectPersonRule(p: WirePerson, width: number, height: number, where: string): void {
  const b = p.bounding_box;
  if (b !== undefined) {
    // Never the empty box (nor any box smaller than the padding around one keypoint), never outside the view.
    expect(b.width, `${where}: box width`).toBeGreaterThanOrEqual(BBOX_MIN_PAD_PX - 0.01);
    expect(b.height, `${where}: box height`).toBeGreaterThanOrEqual(BBOX_MIN_PAD_PX - 0.01);
    expect(b.x).toBeGreaterThanOrEqual(0);
    expect(b.y).toBeGreaterThanOrEqual(0);
    expect(b.x + b.width).toBeLessThanOrEqual(width + 0.01);
    expect(b.y + b.height).toBeLessThanOrEqual(height + 0.01);
  }
  // A box exactly when the person is in view, and the flag says which.
  expect(p.in_view, `${where}: in_view`).toBe(b !== undefined);
  if (!p.in_view) {
    expect(p.dense_pose?.iuv_image, `${where}: no IUV image without a box to draw it over`).toBeUndefined();
    // Everything that does not depend on the view is still there.
    expect(p.location, `${where}: floor position`).toMatchObject({ x: expect.any(Number), y: expect.any(Number) });
    if (p.keypoints?.length) {
      expect(p.keypoints).toHaveLength(17);
      for (const k of p.keypoints) expect(k, `${where}: keypoint ${k.name}`).toMatchObject({ confidence: 0, visible: false });
    }
  }
}

describe('renderings of a person outside the reference view', () => {
  // The camera in the middle of the room looking into its back half: a person can be in view,
  // behind it, or beside it (outside the 90 degree field of view) while on the floor plan.
  const view = { ...DEFAULT_VIEW, y: 2.5 };
  const cam = viewCamera(view);
  const seen = personAt(cam, 3, 4.5, 1);
  const behind = personAt(cam, 3, 1, 2);
  const beside = personAt(cam, 0.2, 2.9, 3);
  const frame: PoseFrame = {
    frameId: 7,
    time: Date.parse('2026-11-27T10:00:00.000Z'),
    sourceId: 'test',
    environmentId: 'default',
    persons: [seen, behind, beside],
    processingMs: 3,
    modelVersion: 'test',
    csiQuality: 1,
  };

  it('the camera puts them where the test says: one fully in view, one behind it, one beside it', () => {
    expect(Array.from(seen.keypoints.filter((_, i) => i % 3 === 2))).toEqual(new Array(17).fill(0.9).map(Math.fround));
    for (const p of [behind, beside]) expect(Array.from(p.bbox)).toEqual([0, 0, 0, 0]);
    // Behind the camera nothing projects; beside it the keypoints fall outside the image.
    expect(cam.depth(3, 1, 1)).toBeLessThan(0);
    expect(beside.keypoints[0]).toBeLessThan(0);
  });

  it('gives no zero-size box in Form A or Form B, with and without keypoints and dense pose', () => {
    for (const form of ['a', 'b'] as Form[])
      for (const includeKeypoints of [true, false])
        for (const includeDensePose of [true, false]) {
          const where = `form ${form} keypoints ${includeKeypoints} dense ${includeDensePose}`;
          const persons = [seen, behind, beside].map((p) => renderPerson(p, form, { includeKeypoints, includeDensePose }) as WirePerson);
          for (const p of persons) expectPersonRule(p, view.width, view.height, where);
          expect(
            persons.map((p) => p.in_view),
            where,
          ).toEqual([true, false, false]);
          if (form === 'b' && includeDensePose) expect(typeof persons[0].dense_pose?.iuv_image).toBe('string');
        }
  });

  it('keeps out-of-view persons in the frame, the filters as before, in every shape the outlets share', () => {
    const v = new PoseFrameView(frame, 1, 'live');
    for (const form of ['a', 'b'] as Form[]) {
      const shape = { form, minConfidence: 0, includeKeypoints: true, includeDensePose: false };
      const body = JSON.parse(v.json(shape)) as WireFrame;
      expect(body.persons).toHaveLength(3);
      for (const p of body.persons) expectPersonRule(p, view.width, view.height, `view ${form}`);
      expect(JSON.stringify(body)).not.toMatch(/"width":0,"height":0/);
      // The same as rendering the frame directly (the CLI's NDJSON path).
      expect(renderFrame(frame, form, { ...shape, routerCount: 1, pipeline: 'live' })).toEqual(body);
      // A person filter still selects an out-of-view person by its id.
      const only = JSON.parse(v.json({ ...shape, personIds: [2] })) as WireFrame;
      expect(only.persons).toHaveLength(1);
      expect(only.persons[0].in_view).toBe(false);
    }
  });
});

describe('the live service with a view that sees nobody', () => {
  let s: TestServer;
  let token: string;
  let broker: Broker | undefined;
  let sub: MqttClient | undefined;
  const mqttPose: WireFrame[] = [];
  const haStates: Array<{ person_count: number; occupied: boolean }> = [];
  const started = Date.now();
  // The view looks out of the room through the receiver's wall: everyone is behind the camera.
  const away = { ...DEFAULT_VIEW, yaw_deg: 180 };

  beforeAll(async () => {
    if (mosquittoPath()) {
      broker = await startBroker();
      sub = await mqtt.connectAsync(broker.url, { reconnectPeriod: 0 });
      sub.on('message', (topic, payload) => {
        if (topic.endsWith('/pose')) mqttPose.push(JSON.parse(payload.toString()));
        if (topic.endsWith('/state')) haStates.push(JSON.parse(payload.toString()));
      });
      await sub.subscribeAsync('csipose/v1/#', { qos: 1 });
    } else console.warn('outOfView: mosquitto not found, the MQTT part is not checked');
    s = await startServer({
      model: true,
      autostart: true,
      rateLimitScale: 100,
      config: {
        environment: { view: away },
        ...(broker ? { streaming: { mqtt_enabled: true, mqtt_url: broker.url, mqtt_homeassistant: true } } : {}),
      },
    });
    token = await s.login();
  });
  afterAll(async () => {
    await sub?.endAsync();
    await s?.close();
    await broker?.stop();
  });

  /** Pose updates with persons from a new subscription in a form, until `n` persons were seen. */
  async function persons(form: Form, n: number): Promise<WirePerson[]> {
    const c = await WsClient.connect(s.port, { token, headers: { 'X-Response-Form': form } });
    try {
      const id = (await c.subscribe('pose_updates', { include_dense_pose: true })).subscription_id;
      const seen: WirePerson[] = [];
      while (seen.length < n)
        seen.push(
          ...(await c.next((m) => m.type === 'pose_update' && m.subscription_id === id && m.data.persons.length > 0, 'a frame with persons')).data.persons,
        );
      return seen;
    } finally {
      await c.close();
    }
  }

  it('sends no zero-size box on the WebSocket (both forms), in the latest pose, on MQTT, and says who is out of view', async () => {
    for (const form of ['a', 'b'] as Form[]) {
      const got = await persons(form, 12);
      for (const p of got) expectPersonRule(p, away.width, away.height, `ws ${form}`);
      expect(got.filter((p) => !p.in_view).length, `ws ${form}: persons behind the camera`).toBeGreaterThan(got.length / 2);
      const latest = await s.api('GET', '/pose/latest', { token, form });
      expect(latest.status).toBe(200);
      for (const p of (form === 'a' ? latest.body : latest.body.data).persons) expectPersonRule(p, away.width, away.height, `latest ${form}`);
    }
    if (broker) {
      const frames = await until(
        async () => (mqttPose.filter((f) => f.persons.length > 0).length >= 5 ? mqttPose : undefined),
        'MQTT pose frames with persons',
      );
      for (const f of frames) for (const p of f.persons) expectPersonRule(p, away.width, away.height, 'mqtt pose');
      // Home Assistant counts the people in the room, seen by the view or not.
      await until(async () => (haStates.some((h) => h.person_count > 0 && h.occupied) ? true : undefined), 'a Home Assistant state with persons');
    }
  });

  it('sends no zero-size box when the view is moved far to the side of the room (live)', async () => {
    const put = await s.api('PUT', '/config', { token, body: { environment: { view: { x: -60, yaw_deg: 0 } } } });
    expect(put.status, put.text).toBe(200);
    const c = await WsClient.connect(s.port, { token });
    try {
      const id = (await c.subscribe('pose_updates', {})).subscription_id;
      // A frame from the moved camera: in front of it, the keypoints project far outside the image.
      const moved = await c.next(
        (m) => m.type === 'pose_update' && m.subscription_id === id && m.data.persons.some((p: WirePerson) => p.keypoints.some((k) => k.x > 2 * away.width)),
        'a frame seen from beside the room',
      );
      for (const p of moved.data.persons) expectPersonRule(p, away.width, away.height, 'ws beside');
      expect(moved.data.persons.some((p: WirePerson) => p.in_view === false)).toBe(true);
    } finally {
      await c.close();
    }
    if (broker) {
      const n = mqttPose.length;
      const frames = await until(async () => (mqttPose.length >= n + 5 ? mqttPose.slice(n) : undefined), 'MQTT frames after the move');
      for (const f of frames) for (const p of f.persons) expectPersonRule(p, away.width, away.height, 'mqtt beside');
    }
  });

  it('stores them and reads them back without a box, in both forms of the history', async () => {
    const range = { start_time: new Date(started - 60_000).toISOString(), end_time: new Date(Date.now() + 60_000).toISOString() };
    const b = await until(async () => {
      const r = await s.api('GET', '/pose/history', { token, query: { ...range, per_page: 500 } });
      return r.status === 200 && r.body.data.length >= 20 ? r.body : undefined;
    }, 'stored person records');
    for (const p of b.data) expectPersonRule(p, away.width, away.height, 'history b');
    expect(b.data.filter((p: WirePerson) => !p.in_view).length).toBeGreaterThan(b.data.length / 2);
    const a = await s.api('GET', '/pose/history', { token, form: 'a', query: { ...range, limit: 200 } });
    expect(a.status, a.text).toBe(200);
    const persons = a.body.poses.flatMap((f: WireFrame) => f.persons);
    expect(persons.length).toBeGreaterThan(0);
    for (const p of persons) expectPersonRule(p, away.width, away.height, 'history a');
  });
});
