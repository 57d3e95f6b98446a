import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_VIEW, viewSpec } from '../../src/pose/camera.js';
import { DEFAULT_ROOM, Scenario } from '../../src/sim/scenario.js';
import { parseUpdate, toFormA, toFormB } from '../../src/config/forms.js';
import { FIELDS, defaults, fieldAt } from '../../src/config/schema.js';
import { ConfigStore, ConfigUpdateError, type ConfigSnapshot } from '../../src/config/store.js';
import { schemaDocument, validateConfig, type FieldError } from '../../src/config/validate.js';
import { ApiError } from '../../src/errors.js';
import { suiteServer } from '../helpers/server.js';
import type { FormView, SchemaNode } from './helpers.js';

const VIEW = 'environment.view';
const KEYS = ['width', 'height', 'hfov_deg', 'x', 'y', 'z', 'yaw_deg', 'pitch_deg'] as const;

/** A camera unlike the default: in a corner behind the front wall, turned and steeply down. */
const CORNER = { width: 1280, height: 720, hfov_deg: 110, x: 0.5, y: -0.2, z: 2.4, yaw_deg: 35, pitch_deg: -30 };

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'csipose-view-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Store updates as the PUT route makes them: parsed (field checks), then applied. */
function view(fields: Record<string, unknown>): Array<{ path: string; value: unknown }> {
  const r = parseUpdate({ environment: { view: fields } });
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.changes;
}

/** The single field error of an update refused when parsed. */
function refused(fields: Record<string, unknown>): FieldError[] {
  const r = parseUpdate({ environment: { view: fields } });
  if (r.ok) throw new Error(`expected ${JSON.stringify(fields)} to be refused`);
  return r.errors;
}

describe('environment.view schema and defaults', () => {
  it('has the eight live fields with their units and bounds', () => {
    const paths = FIELDS.filter((f) => f.path.startsWith(`${VIEW}.`)).map((f) => f.path.slice(VIEW.length + 1));
    expect(paths).toEqual([...KEYS]);
    for (const p of paths) expect(fieldAt(`${VIEW}.${p}`)!.restart, p).toBe(false);
    expect(fieldAt(`${VIEW}.hfov_deg`)).toMatchObject({ type: 'number', minimum: 20, maximum: 170, unit: 'deg' });
    expect(fieldAt(`${VIEW}.yaw_deg`)).toMatchObject({ type: 'number', minimum: -180, maximum: 180, unit: 'deg' });
    expect(fieldAt(`${VIEW}.pitch_deg`)).toMatchObject({ type: 'number', minimum: -89, maximum: 89, unit: 'deg' });
    for (const p of ['x', 'y']) expect(fieldAt(`${VIEW}.${p}`), p).toMatchObject({ type: 'number', minimum: -100, maximum: 100, unit: 'm' });
    expect(fieldAt(`${VIEW}.z`)).toMatchObject({ type: 'number', minimum: 0, maximum: 20, unit: 'm' });
  });

  it("defaults to DECISIONS' reference view, the one DEFAULT_VIEW holds, centred on the default room", () => {
    expect(defaults().environment.view).toEqual({ width: 640, height: 480, hfov_deg: 90, x: 3, y: 0.05, z: 1.6, yaw_deg: 0, pitch_deg: -10 });
    expect(defaults().environment.view).toEqual(DEFAULT_VIEW);
    expect(DEFAULT_VIEW.x).toBe(defaults().environment.site.room_width / 2);
    expect(DEFAULT_VIEW.x).toBe(DEFAULT_ROOM.width / 2);
    expect(validateConfig(defaults())).toEqual([]);
  });

  it("is the simulator's default camera, whose x follows the room's width", () => {
    const spec = viewSpec(defaults().environment.view);
    const sc = new Scenario({}, 0, 1, 0.0579, 1, 1);
    expect(sc.camera.position).toEqual(spec.position);
    expect([sc.camera.focalPx, sc.camera.width, sc.camera.height]).toEqual([spec.focalPx, 640, 480]);
    const wide = new Scenario({ room: { width: 8 } }, 0, 1, 0.0579, 1, 1);
    expect(wide.camera.position).toEqual({ x: 4, y: 0.05, z: 1.6 });
  });

  it('is in the JSON schema document with the conventions, bounds, units, defaults and the live flag', () => {
    const doc = schemaDocument() as SchemaNode;
    const g = doc.properties.environment.properties.view;
    expect(g.type).toBe('object');
    expect(g.additionalProperties).toBe(false);
    expect(g.description).toMatch(/^Reference view: keypoints and bounding boxes are pixels of this image/);
    expect(g.description).toContain("x across the room from its left wall as seen from the receiver's (front) wall");
    expect(g.description).toContain('yaw_deg 0 looks straight into the room (+y), positive turns towards +x');
    expect(g.description).toContain('pitch_deg negative looks down');
    expect(Object.keys(g.properties)).toEqual([...KEYS]);
    expect(g.properties.hfov_deg).toMatchObject({ type: 'number', minimum: 20, maximum: 170, default: 90, 'x-unit': 'deg', 'x-requires-restart': false });
    expect(g.properties.pitch_deg).toMatchObject({ type: 'number', minimum: -89, maximum: 89, default: -10, 'x-unit': 'deg' });
    expect(g.properties.yaw_deg).toMatchObject({ type: 'number', minimum: -180, maximum: 180, default: 0, 'x-unit': 'deg' });
    expect(g.properties.y).toMatchObject({ type: 'number', minimum: -100, maximum: 100, default: 0.05, 'x-unit': 'm' });
    expect(g.properties.z).toMatchObject({ type: 'number', minimum: 0, maximum: 20, default: 1.6, 'x-unit': 'm' });
  });

  it('is an extra of both response forms at its canonical path, and can be PUT back', () => {
    const c = defaults();
    Object.assign(c.environment.view, CORNER);
    expect((toFormA(c) as FormView).environment.view).toEqual(CORNER);
    expect((toFormB(c) as FormView).environment.view).toEqual(CORNER);
    expect((toFormA(c, { strict: true }) as FormView).environment.view).toBeUndefined();
    for (const form of [toFormA(c), toFormB(c, { modelVersion: 'v1' })]) {
      const r = parseUpdate(form, { modelVersion: 'v1' });
      expect(r.ok).toBe(true);
      if (r.ok) for (const [k, v] of Object.entries(CORNER)) expect(r.changes.find((ch) => ch.path === `${VIEW}.${k}`)?.value, k).toBe(v);
    }
  });
});

describe('validation of environment.view', () => {
  it('refuses each new field outside its range, naming it', () => {
    const cases: Array<[string, number, string]> = [
      ['hfov_deg', 19, '20.0 and 170.0'],
      ['hfov_deg', 171, '20.0 and 170.0'],
      ['yaw_deg', 180.5, '-180.0 and 180.0'],
      ['yaw_deg', -181, '-180.0 and 180.0'],
      ['pitch_deg', -90, '-89.0 and 89.0'],
      ['pitch_deg', 89.5, '-89.0 and 89.0'],
      ['x', -100.5, '-100.0 and 100.0'],
      ['y', 101, '-100.0 and 100.0'],
      ['z', -0.1, '0.0 and 20.0'],
      ['z', 21, '0.0 and 20.0'],
    ];
    for (const [k, v, bounds] of cases) {
      const field = `${VIEW}.${k}`;
      expect(refused({ [k]: v }), `${k} = ${v}`).toEqual([{ field, message: `${field} must be between ${bounds}, got ${v}`, received_value: v }]);
    }
    expect(refused({ hfov_deg: '90' })).toEqual([
      { field: `${VIEW}.hfov_deg`, message: `${VIEW}.hfov_deg must be a number between 20.0 and 170.0, got a string ("90")`, received_value: '90' },
    ]);
    // The bounds themselves are fine.
    for (const f of [{ hfov_deg: 20 }, { hfov_deg: 170 }, { yaw_deg: -180 }, { yaw_deg: 180 }, { pitch_deg: -89 }, { pitch_deg: 89 }, { x: -100 }, { z: 0 }]) {
      expect(parseUpdate({ environment: { view: f } }).ok, JSON.stringify(f)).toBe(true);
    }
  });

  it('refuses an out-of-range update in the store with VALIDATION_ERROR (422) and changes nothing', async () => {
    const store = await ConfigStore.open({ dataDir: dir });
    await store.update(view({ yaw_deg: 10 }));
    const before: ConfigSnapshot = store.get();
    const file = await readFile(join(dir, 'config.json'), 'utf8');
    const e = await store.update([{ path: `${VIEW}.pitch_deg`, value: -95 }]).then(
      () => null,
      (err: unknown) => err,
    );
    expect(e).toBeInstanceOf(ConfigUpdateError);
    expect(e).toBeInstanceOf(ApiError);
    const err = e as ConfigUpdateError;
    const expected = [{ field: `${VIEW}.pitch_deg`, message: `${VIEW}.pitch_deg must be between -89.0 and 89.0, got -95`, received_value: -95 }];
    expect(err.errors).toEqual(expected);
    expect([err.code, err.status]).toEqual(['VALIDATION_ERROR', 422]);
    expect(store.get()).toBe(before);
    expect(await readdir(dir)).toEqual(['config.json']);
    expect(await readFile(join(dir, 'config.json'), 'utf8')).toBe(file);
  });

  it('stores a good view live, no restart needed', async () => {
    const store = await ConfigStore.open({ dataDir: dir });
    const r = await store.update(view(CORNER));
    expect(r.changes.map((c) => c.path)).toEqual(KEYS.map((k) => `${VIEW}.${k}`));
    expect(r.changes.every((c) => !c.restart)).toBe(true);
    expect(store.get().environment.view).toEqual(CORNER);
  });
});

describe('environment.view through the server', () => {
  const srv = suiteServer();

  it('GET /config/schema lists the view fields and their defaults', async () => {
    const r = await srv.s.api('GET', '/config/schema', { token: srv.token });
    expect(r.status).toBe(200);
    const g = r.body.data.schema.properties.environment.properties.view;
    expect(Object.keys(g.properties)).toEqual([...KEYS]);
    expect(g.properties.hfov_deg).toMatchObject({ type: 'number', minimum: 20, maximum: 170, default: 90, 'x-unit': 'deg', 'x-requires-restart': false });
    expect(r.body.data.defaults.environment.view).toEqual(DEFAULT_VIEW);
  });

  it('stores a good view live and reads it back in both forms', async () => {
    const put = await srv.s.api('PUT', '/config', { token: srv.token, body: { environment: { view: CORNER } } });
    expect(put.status, put.text).toBe(200);
    expect(put.body.data.updated_fields).toEqual(KEYS.map((k) => `${VIEW}.${k}`));
    expect(put.body.data.requires_restart).toBe(false);
    expect((await srv.s.api('GET', '/config', { token: srv.token, form: 'a' })).body.environment.view).toEqual(CORNER);
    expect((await srv.s.api('GET', '/config', { token: srv.token, form: 'b' })).body.data.environment.view).toEqual(CORNER);
    expect(srv.s.svc.config.get().environment.view).toEqual(CORNER);
  });

  it('refuses an out-of-range view with 422 VALIDATION_ERROR naming the field, in both forms, and changes nothing', async () => {
    const before = (await srv.s.api('GET', '/config', { token: srv.token, form: 'a' })).body;
    const version = srv.s.svc.config.version;
    const cases: Array<{ body: unknown; field: string; message: string }> = [
      { body: { environment: { view: { hfov_deg: 175 } } }, field: `${VIEW}.hfov_deg`, message: `${VIEW}.hfov_deg must be between 20.0 and 170.0, got 175` },
      { body: { environment: { view: { yaw_deg: 270 } } }, field: `${VIEW}.yaw_deg`, message: `${VIEW}.yaw_deg must be between -180.0 and 180.0, got 270` },
      { body: { environment: { view: { pitch_deg: -90 } } }, field: `${VIEW}.pitch_deg`, message: `${VIEW}.pitch_deg must be between -89.0 and 89.0, got -90` },
      { body: { environment: { view: { z: 25 } } }, field: `${VIEW}.z`, message: `${VIEW}.z must be between 0.0 and 20.0, got 25` },
    ];
    for (const c of cases) {
      const b = await srv.s.api('PUT', '/config', { token: srv.token, body: c.body });
      expect(b.status, b.text).toBe(422);
      expect(b.body.error.code).toBe('VALIDATION_ERROR');
      expect(b.body.error.details).toMatchObject({ field: c.field, reason: c.message });
      const a = await srv.s.api('PUT', '/config', { token: srv.token, body: c.body, form: 'a' });
      expect(a.status, a.text).toBe(422);
      expect(a.body.error.code).toBe('VALIDATION_ERROR');
      expect(a.body.error.details.field_errors).toEqual([{ field: c.field, message: c.message, received_value: expect.anything() }]);
    }
    expect((await srv.s.api('GET', '/config', { token: srv.token, form: 'a' })).body).toEqual(before);
    expect(srv.s.svc.config.version).toBe(version);
  });
});
