import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { siteVector } from '../../src/model/contract.js';
import { Scenario } from '../../src/sim/scenario.js';
import { parseUpdate, toFormA, toFormB } from '../../src/config/forms.js';
import { FIELDS, defaults, fieldAt } from '../../src/config/schema.js';
import { siteGeometry } from '../../src/config/site.js';
import { ConfigStartupError, ConfigStore, ConfigUpdateError, type ConfigSnapshot } from '../../src/config/store.js';
import { CONFIG_RULES, schemaDocument, validateConfig, type FieldError } from '../../src/config/validate.js';
import { ApiError } from '../../src/errors.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { liveParams } from '../../pipelines/settings.js';

const SITE = 'environment.site';
const COORDS = ['receiver_x', 'receiver_y', 'receiver_z', 'transmitter_x', 'transmitter_y', 'transmitter_z'] as const;

/** A measured installation unlike the defaults: a wide, shallow room, radios in opposite corners. */
const MEASURED = {
  known: true,
  room_width: 8.5,
  room_depth: 4,
  receiver_x: 0.5,
  receiver_y: 0.1,
  receiver_z: 2.1,
  transmitter_x: 8,
  transmitter_y: 4,
  transmitter_z: 0.9,
};

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'csipose-site-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The error a refused store update rejects with. */
/** The error of a radio coordinate outside the room (`bound` as the message writes the wall). */
function outside(radio: 'receiver' | 'transmitter', axis: 'x' | 'y', bound: string, got: number) {
  const field = `${SITE}.${radio}_${axis}`;
  const wall = axis === 'x' ? 'room_width' : 'room_depth';
  return { field, message: `${field} must be between 0.0 and ${bound} (${SITE}.${wall}: the ${radio} must be inside the room), got ${got}`, received_value: got };
}

async function refusal(p: Promise<unknown>): Promise<ConfigUpdateError> {
  const e = await p.then(
    () => {
      throw new Error('expected the update to be refused');
    },
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(ConfigUpdateError);
  return e as ConfigUpdateError;
}

/** Store updates as the PUT route makes them: parsed (field checks), then applied. */
function site(fields: Record<string, unknown>): Array<{ path: string; value: unknown }> {
  const r = parseUpdate({ environment: { site: fields } });
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.changes;
}

describe('environment.site schema and defaults', () => {
  it('has the nine live fields in metres with the brief bounds', () => {
    const paths = FIELDS.filter((f) => f.path.startsWith(`${SITE}.`)).map((f) => f.path.slice(SITE.length + 1));
    expect(paths).toEqual(['known', 'room_width', 'room_depth', ...COORDS]);
    for (const p of paths) expect(fieldAt(`${SITE}.${p}`)!.restart, p).toBe(false);
    expect(fieldAt(`${SITE}.known`)).toMatchObject({ type: 'boolean', default: false });
    for (const p of ['room_width', 'room_depth']) expect(fieldAt(`${SITE}.${p}`), p).toMatchObject({ type: 'number', minimum: 1, maximum: 100, unit: 'm' });
    for (const p of COORDS) {
      const max = p.endsWith('_z') ? 20 : 100;
      expect(fieldAt(`${SITE}.${p}`), p).toMatchObject({ type: 'number', minimum: 0, maximum: max, unit: 'm' });
    }
  });

  it("defaults to the simulator's default room, with the site unknown", () => {
    expect(defaults().environment.site).toEqual({
      known: false,
      room_width: 6,
      room_depth: 5,
      receiver_x: 3,
      receiver_y: 0.2,
      receiver_z: 1.2,
      transmitter_x: 3,
      transmitter_y: 4.8,
      transmitter_z: 1.2,
    });
    // One antenna each: the array centre is the radio's position.
    const sc = new Scenario({}, 0, 1, 0.0579, 1, 1);
    const d = defaults().environment.site;
    expect([d.room_width, d.room_depth]).toEqual([sc.room.width, sc.room.depth]);
    expect([d.receiver_x, d.receiver_y, d.receiver_z].map((v, i) => v - sc.rxPositions[i]!).every((x) => Math.abs(x) < 1e-12)).toBe(true);
    expect([d.transmitter_x, d.transmitter_y, d.transmitter_z].map((v, i) => v - sc.txPositions[i]!).every((x) => Math.abs(x) < 1e-12)).toBe(true);
    expect(validateConfig(defaults())).toEqual([]);
  });

  it('is in the JSON schema document with bounds, unit, default and the live flag', () => {
    const doc = schemaDocument() as any;
    const g = doc.properties.environment.properties.site;
    expect(g.type).toBe('object');
    expect(g.additionalProperties).toBe(false);
    expect(g.description).toMatch(/^Where the radios hang in which room: the pose model's optional `site` input/);
    expect(g.description).toContain('DEFAULT_ROOM');
    expect(Object.keys(g.properties)).toEqual(['known', 'room_width', 'room_depth', ...COORDS]);
    expect(g.properties.known).toMatchObject({ type: 'boolean', default: false, 'x-requires-restart': false });
    expect(g.properties.room_depth).toMatchObject({ type: 'number', minimum: 1, maximum: 100, default: 5, 'x-unit': 'm', 'x-requires-restart': false });
    expect(g.properties.transmitter_y).toMatchObject({ type: 'number', minimum: 0, maximum: 100, default: 4.8, 'x-unit': 'm' });
    expect(g.properties.receiver_z).toMatchObject({ type: 'number', minimum: 0, maximum: 20, default: 1.2, 'x-unit': 'm' });
  });

  it('is an extra of both response forms at its canonical path, and only in the extended forms', () => {
    const c = defaults();
    Object.assign(c.environment.site, MEASURED);
    expect((toFormA(c) as any).environment.site).toEqual(MEASURED);
    expect((toFormB(c) as any).environment.site).toEqual(MEASURED);
    expect((toFormA(c, { strict: true }) as any).environment.site).toBeUndefined();
    expect((toFormB(c, { strict: true }) as any).environment).toBeUndefined();
    // What was read can be PUT back in either form.
    for (const form of [toFormA(c), toFormB(c, { modelVersion: 'v1' })]) {
      const r = parseUpdate(form, { modelVersion: 'v1' });
      expect(r.ok).toBe(true);
      if (r.ok) for (const [k, v] of Object.entries(MEASURED)) expect(r.changes.find((ch) => ch.path === `${SITE}.${k}`)?.value, k).toBe(v);
    }
  });
});

describe('siteGeometry', () => {
  it('is null while the site is unknown (the default)', async () => {
    const store = await ConfigStore.open({ dataDir: dir });
    expect(siteGeometry(store.get())).toBeNull();
    // Values set but `known` still false: still unknown.
    await store.update(site({ room_width: 9, receiver_x: 4 }));
    expect(siteGeometry(store.get())).toBeNull();
  });

  it('maps a known site onto the model contract, and its site row follows', async () => {
    const store = await ConfigStore.open({ dataDir: dir });
    await store.update(site(MEASURED));
    const g = siteGeometry(store.get());
    expect(g).toEqual({ roomWidth: 8.5, roomDepth: 4, receiver: { x: 0.5, y: 0.1, z: 2.1 }, transmitter: { x: 8, y: 4, z: 0.9 } });
    // SITE_COLUMNS: known, width, depth, rx x, rx z, tx - rx in x, y, z.
    expect([...siteVector(g)]).toEqual([1, 8.5, 4, 0.5, 2.1, 7.5, 3.9, -1.2].map(Math.fround));
  });

  it('gives the same frozen object for one snapshot and a new one after an update', async () => {
    const store = await ConfigStore.open({ dataDir: dir });
    await store.update(site({ known: true }));
    const a = siteGeometry(store.get())!;
    expect(siteGeometry(store.get())).toBe(a);
    expect(Object.isFrozen(a) && Object.isFrozen(a.receiver) && Object.isFrozen(a.transmitter)).toBe(true);
    expect(a.receiver).toEqual({ x: 3, y: 0.2, z: 1.2 });
    await store.update(site({ receiver_x: 1 }));
    const b = siteGeometry(store.get())!;
    expect(b).not.toBe(a);
    expect(b.receiver.x).toBe(1);
    expect(a.receiver.x).toBe(3);
  });

  it('reads a mutable draft afresh on every call', () => {
    const c = defaults();
    c.environment.site.known = true;
    expect(siteGeometry(c as ConfigSnapshot)!.roomWidth).toBe(6);
    c.environment.site.room_width = 7;
    expect(siteGeometry(c as ConfigSnapshot)!.roomWidth).toBe(7);
  });
});

describe('validation of environment.site', () => {
  /** The stored state that a refused update must leave alone. */
  async function state(store: ConfigStore): Promise<{ config: ConfigSnapshot; version: number; files: string[]; file: string | null }> {
    const files = (await readdir(dir)).sort();
    const file = files.includes('config.json') ? await readFile(join(dir, 'config.json'), 'utf8') : null;
    return { config: store.get(), version: store.version, files, file };
  }

  async function refusedWith(store: ConfigStore, changes: Array<{ path: string; value: unknown }>, expected: FieldError[]): Promise<void> {
    const before = await state(store);
    const e = await refusal(store.update(changes));
    expect(e.errors).toEqual(expected);
    // The answer the server gives for it: 422 VALIDATION_ERROR with the field errors.
    expect(e).toBeInstanceOf(ApiError);
    expect(e.code).toBe('VALIDATION_ERROR');
    expect(e.status).toBe(422);
    expect(e.details).toEqual({ field_errors: expected });
    const after = await state(store);
    expect(after.config).toBe(before.config);
    expect(after).toEqual(before);
  }

  it('refuses a non-number, naming the field (parse and store alike)', async () => {
    const expected = { field: `${SITE}.receiver_x`, message: `${SITE}.receiver_x must be a number between 0.0 and 100.0, got a string ("3")`, received_value: '3' };
    expect(parseUpdate({ environment: { site: { receiver_x: '3' } } })).toEqual({ ok: false, errors: [expected] });
    expect(parseUpdate({ environment: { site: { known: 1 } } })).toMatchObject({ ok: false, errors: [{ field: `${SITE}.known`, received_value: 1 }] });
    const store = await ConfigStore.open({ dataDir: dir });
    await store.update(site({ transmitter_z: 2 })); // a config.json exists, so "unchanged" covers the file
    await refusedWith(store, [{ path: `${SITE}.receiver_x`, value: '3' }], [expected]);
  });

  it('refuses values out of their bounds', async () => {
    expect(parseUpdate({ environment: { site: { receiver_z: 21 } } })).toEqual({
      ok: false,
      errors: [{ field: `${SITE}.receiver_z`, message: `${SITE}.receiver_z must be between 0.0 and 20.0, got 21`, received_value: 21 }],
    });
    expect(parseUpdate({ environment: { site: { room_width: 0.5 } } })).toMatchObject({
      ok: false,
      errors: [{ field: `${SITE}.room_width`, message: `${SITE}.room_width must be between 1.0 and 100.0, got 0.5` }],
    });
    expect(parseUpdate({ environment: { site: { transmitter_y: -0.1 } } })).toMatchObject({ ok: false, errors: [{ field: `${SITE}.transmitter_y` }] });
    const store = await ConfigStore.open({ dataDir: dir });
    await refusedWith(store, [{ path: `${SITE}.room_depth`, value: 101 }], [
      { field: `${SITE}.room_depth`, message: `${SITE}.room_depth must be between 1.0 and 100.0, got 101`, received_value: 101 },
    ]);
  });

  it('refuses a receiver or a transmitter outside the room', async () => {
    const store = await ConfigStore.open({ dataDir: dir });
    await store.update(site({ known: true }));
    await refusedWith(store, site({ receiver_x: 7 }), [outside('receiver', 'x', '6.0', 7)]);
    await refusedWith(store, site({ transmitter_y: 5.5 }), [outside('transmitter', 'y', '5.0', 5.5)]);
    // Each value is fine for its own field: only the whole configuration shows the problem.
    expect(parseUpdate({ environment: { site: { receiver_x: 7 } } }).ok).toBe(true);
  });

  it('refuses shrinking the room past a radio already stored, naming the radio', async () => {
    const store = await ConfigStore.open({ dataDir: dir });
    await store.update(site({ room_width: 10, receiver_x: 8 }));
    await refusedWith(store, site({ room_width: 7 }), [outside('receiver', 'x', '7.0', 8)]);
    // The transmitter still hangs at its default x = 3: moving the receiver in with the wall does not save it.
    await refusedWith(store, site({ room_width: 2.5, receiver_x: 1 }), [outside('transmitter', 'x', '2.5', 3)]);
    await refusedWith(store, site({ room_depth: 4.5 }), [outside('transmitter', 'y', '4.5', 4.8)]);
  });

  it('accepts moving a wall and a radio together, and radios on the walls', async () => {
    const store = await ConfigStore.open({ dataDir: dir });
    const r = await store.update(site({ room_width: 2.5, receiver_x: 0, transmitter_x: 2.5, transmitter_y: 5 }));
    expect(r.changes.map((c) => c.path)).toEqual([`${SITE}.room_width`, `${SITE}.receiver_x`, `${SITE}.transmitter_x`, `${SITE}.transmitter_y`]);
    expect(store.get().environment.site).toMatchObject({ room_width: 2.5, receiver_x: 0, transmitter_x: 2.5, transmitter_y: 5 });
  });

  it('checks each queued update against the result of the one before it', async () => {
    const store = await ConfigStore.open({ dataDir: dir });
    const [first, second] = await Promise.allSettled([store.update(site({ receiver_x: 5.5 })), store.update(site({ room_width: 5 }))]);
    expect(first.status).toBe('fulfilled');
    expect(second.status).toBe('rejected');
    expect(((second as PromiseRejectedResult).reason as ConfigUpdateError).errors.map((e) => e.field)).toEqual([`${SITE}.receiver_x`]);
    expect(store.get().environment.site).toMatchObject({ room_width: 6, receiver_x: 5.5 });
    expect(store.version).toBe(1);
    // And the queue goes on.
    await store.update(site({ room_width: 5.5 }));
    expect(store.get().environment.site.room_width).toBe(5.5);
  });

  it('is one rule of the general list, checked by validateConfig', () => {
    expect(CONFIG_RULES.map((r) => r.description)).toEqual([expect.stringContaining('environment.site')]);
    const c = defaults();
    c.environment.site.room_depth = 4;
    c.environment.site.receiver_y = 4.5;
    expect(validateConfig(c).map((e) => e.field)).toEqual([`${SITE}.receiver_y`, `${SITE}.transmitter_y`]);
  });

  it('sets aside a config.json whose site breaks the rule', async () => {
    const text = JSON.stringify({ version: 3, saved_at: 'x', settings: { environment: { site: { room_width: 2 } } } });
    await writeFile(join(dir, 'config.json'), text);
    const store = await ConfigStore.open({ dataDir: dir, now: () => Date.UTC(2026, 0, 31, 12) });
    expect(store.get()).toEqual(defaults());
    expect(store.version).toBe(0);
    expect(store.warnings).toHaveLength(1);
    expect(store.warnings[0]).toContain(`${SITE}.receiver_x must be between 0.0 and 2.0`);
    expect(await readdir(dir)).toEqual(['config.json.bad-2026-01-31T12-00-00.000Z']);
  });

  it('refuses to start with a --config overlay that, over the saved settings, puts a radio outside the room', async () => {
    const first = await ConfigStore.open({ dataDir: dir });
    await first.update(site({ room_width: 10, receiver_x: 9 }));
    const file = join(dir, 'deploy.json');
    await writeFile(file, JSON.stringify({ environment: { site: { room_width: 8 } } }));
    const e = await ConfigStore.open({ dataDir: dir, configFile: file }).then(
      () => null,
      (err: unknown) => err,
    );
    expect(e).toBeInstanceOf(ConfigStartupError);
    expect((e as ConfigStartupError).errors.map((x) => x.field)).toEqual([`${SITE}.receiver_x`]);
    expect((e as ConfigStartupError).message).toContain(`--config ${file}: ${SITE}.receiver_x must be between 0.0 and 8.0`);
  });
});

describe('environment.site through the server', () => {
  let s: TestServer;
  let token: string;
  beforeAll(async () => {
    s = await startServer();
    token = await s.login();
  });
  afterAll(() => s?.close());

  it('GET /config/schema lists the site fields and their defaults', async () => {
    const r = await s.api('GET', '/config/schema', { token });
    expect(r.status).toBe(200);
    const g = r.body.data.schema.properties.environment.properties.site;
    expect(Object.keys(g.properties)).toEqual(['known', 'room_width', 'room_depth', ...COORDS]);
    expect(g.properties.receiver_x).toMatchObject({ type: 'number', minimum: 0, maximum: 100, default: 3, 'x-unit': 'm', 'x-requires-restart': false });
    expect(r.body.data.defaults.environment.site).toEqual(defaults().environment.site);
  });

  it('stores a good site update live and reads it back in both forms', async () => {
    const put = await s.api('PUT', '/config', { token, body: { environment: { site: MEASURED } } });
    expect(put.status, put.text).toBe(200);
    expect(put.body.data.updated_fields).toEqual(Object.keys(MEASURED).map((k) => `${SITE}.${k}`));
    expect(put.body.data.requires_restart).toBe(false);
    expect(put.body.data.configuration.environment.site).toEqual(MEASURED);
    const a = await s.api('GET', '/config', { token, form: 'a' });
    expect(a.body.environment.site).toEqual(MEASURED);
    const b = await s.api('GET', '/config', { token, form: 'b' });
    expect(b.body.data.environment.site).toEqual(MEASURED);
    expect(siteGeometry(s.svc.config.get())).toEqual({ roomWidth: 8.5, roomDepth: 4, receiver: { x: 0.5, y: 0.1, z: 2.1 }, transmitter: { x: 8, y: 4, z: 0.9 } });
    // The live pipeline's settings (read by infer on its next batch) carry it, and the status says so.
    expect(liveParams(s.svc.config.get()).infer.site).toBe('8.5,4,0.5,0.1,2.1,8,4,0.9');
    const status = async () => (await s.api('GET', '/system/status', { token })).body.data.components.neural_network.site_known;
    expect(await status()).toBe(true);

    const partial = await s.api('PUT', '/config', { token, form: 'a', body: { environment: { site: { known: false } } } });
    expect(partial.body).toEqual({ status: 'updated', changes_applied: [`${SITE}.known`], restart_required: false, validation_warnings: [] });
    expect((await s.api('GET', '/config', { token, form: 'a' })).body.environment.site).toEqual({ ...MEASURED, known: false });
    expect(siteGeometry(s.svc.config.get())).toBeNull();
    expect(liveParams(s.svc.config.get()).infer.site).toBe('');
    expect(await status()).toBe(false);
  });

  it('refuses a bad site with 422 VALIDATION_ERROR naming the field, in both forms, and changes nothing', async () => {
    const before = (await s.api('GET', '/config', { token, form: 'a' })).body;
    const version = s.svc.config.version;
    const saved = await readFile(join(s.dataDir, 'config.json'), 'utf8');
    const width = before.environment.site.room_width as number;
    const cases: Array<{ body: unknown; field: string; message: string }> = [
      {
        // Shrinks the room below the receiver stored by the previous test (x = 0.5 is fine, the transmitter at 8 is not).
        body: { environment: { site: { room_width: 7 } } },
        field: `${SITE}.transmitter_x`,
        message: `${SITE}.transmitter_x must be between 0.0 and 7.0 (${SITE}.room_width: the transmitter must be inside the room), got 8`,
      },
      {
        body: { environment: { site: { receiver_x: width + 1, known: true } } },
        field: `${SITE}.receiver_x`,
        message: `${SITE}.receiver_x must be between 0.0 and ${width} (${SITE}.room_width: the receiver must be inside the room), got ${width + 1}`,
      },
      { body: { environment: { site: { receiver_y: 'near the door' } } }, field: `${SITE}.receiver_y`, message: `${SITE}.receiver_y must be a number between 0.0 and 100.0, got a string ("near the door")` },
      { body: { environment: { site: { transmitter_z: 25 } } }, field: `${SITE}.transmitter_z`, message: `${SITE}.transmitter_z must be between 0.0 and 20.0, got 25` },
    ];
    for (const c of cases) {
      const b = await s.api('PUT', '/config', { token, body: c.body });
      expect(b.status, b.text).toBe(422);
      expect(b.body.success).toBe(false);
      expect(b.body.error.code).toBe('VALIDATION_ERROR');
      expect(b.body.error.details).toMatchObject({ field: c.field, reason: c.message });
      const a = await s.api('PUT', '/config', { token, body: c.body, form: 'a' });
      expect(a.status, a.text).toBe(422);
      expect(a.body.error.code).toBe('VALIDATION_ERROR');
      expect(a.body.error.message).toBe(c.message);
      expect(a.body.error.details.field_errors).toEqual([{ field: c.field, message: c.message, received_value: expect.anything() }]);
    }
    expect((await s.api('GET', '/config', { token, form: 'a' })).body).toEqual(before);
    expect(s.svc.config.version).toBe(version);
    expect(await readFile(join(s.dataDir, 'config.json'), 'utf8')).toBe(saved);
  });
});
