import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { siteVector } from '../../src/model/contract.js';
import { Scenario } from '../../src/sim/scenario.js';
import { parseUpdate, toFormA, toFormB } from '../../src/config/forms.js';
import { FIELDS, defaults, fieldAt } from '../../src/config/schema.js';
import { primaryLinkRadios, siteGeometry } from '../../src/config/site.js';
import { ConfigStartupError, ConfigStore, ConfigUpdateError, type ConfigSnapshot } from '../../src/config/store.js';
import { CONFIG_RULES, schemaDocument, validateConfig, type FieldError } from '../../src/config/validate.js';
import { DEFAULT_RADIOS, HALF_WAVELENGTH_5G_M, siteLinks, type RadioConfig } from '../../src/csi/radios.js';
import { ApiError } from '../../src/errors.js';
import { suiteServer } from '../helpers/server.js';
import type { FormView, SchemaNode } from './helpers.js';
import { liveParams } from '../../pipelines/settings.js';

const SITE = 'environment.site';
const RADIOS = `${SITE}.radios`;
const SPACING = Math.round(HALF_WAVELENGTH_5G_M * 1e4) / 1e4;

/** A radio as stored: every field, in the stored order. */
function radio(id: string, role: 'tx' | 'rx', x: number, y: number, z: number, yaw_deg: number, more: Partial<RadioConfig> = {}): RadioConfig {
  return { id, role, x, y, z, yaw_deg, antennas: 3, spacing_m: SPACING, format: 'intel5300', ...more };
}

/** A measured installation unlike the defaults: a wide, shallow room, the router in a corner, two receivers. */
const MEASURED = {
  known: true,
  room_width: 8.5,
  room_depth: 4,
  radios: [
    radio('router', 'tx', 8, 4, 0.9, 225),
    radio('desk', 'rx', 0.5, 0.1, 2.1, 45),
    radio('shelf', 'rx', 4, 4, 1.5, 270, { antennas: 2, format: 'nexmon' }),
  ],
};

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'csipose-site-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The error of a radio coordinate outside the room (`bound` as the message writes the wall). */
function outside(i: number, id: string, axis: 'x' | 'y', bound: string, got: number) {
  const field = `${RADIOS}[${i}].${axis}`;
  const wall = axis === 'x' ? 'room_width' : 'room_depth';
  return {
    field,
    message: `${field} must be between 0.0 and ${bound} (${SITE}.${wall}: radio ${id} must be inside the room), got ${got}`,
    received_value: got,
  };
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

/** The default radios with one of them moved. */
function moved(id: string, to: Partial<RadioConfig>): RadioConfig[] {
  return DEFAULT_RADIOS.map((r) => (r.id === id ? { ...r, ...to } : { ...r }));
}

describe('environment.site schema and defaults', () => {
  it('has the room, the known switch and the radios', () => {
    const paths = FIELDS.filter((f) => f.path.startsWith(`${SITE}.`)).map((f) => f.path.slice(SITE.length + 1));
    expect(paths).toEqual(['known', 'room_width', 'room_depth', 'radios']);
    for (const p of ['known', 'room_width', 'room_depth']) expect(fieldAt(`${SITE}.${p}`)!.restart, p).toBe(false);
    // The sources and the link join take the radios when the system starts.
    expect(fieldAt(RADIOS)!.restart).toBe(true);
    expect(fieldAt(`${SITE}.known`)).toMatchObject({ type: 'boolean', default: false });
    for (const p of ['room_width', 'room_depth']) expect(fieldAt(`${SITE}.${p}`), p).toMatchObject({ type: 'number', minimum: 1, maximum: 100, unit: 'm' });
  });

  it("defaults to the simulator's default room with a router and three receivers, the site unknown", () => {
    const d = defaults().environment.site;
    expect(d).toEqual({
      known: false,
      room_width: 6,
      room_depth: 5,
      radios: [
        radio('tx', 'tx', 3, 4.8, 1.2, 270),
        radio('rx1', 'rx', 3, 0.2, 1.2, 90),
        radio('rx2', 'rx', 0.2, 2.5, 1.2, 0),
        radio('rx3', 'rx', 5.8, 2.5, 1.2, 180),
      ],
    });
    expect(siteLinks(d.radios).map((l) => l.id)).toEqual(['tx-rx1', 'tx-rx2', 'tx-rx3']);
    // The primary link is where the simulator's one-link room has its radios (one antenna each: the array centre).
    const sc = new Scenario({}, 0, 1, 0.0579, 1, 1);
    const { tx, rx } = primaryLinkRadios(defaults() as ConfigSnapshot);
    expect([d.room_width, d.room_depth]).toEqual([sc.room.width, sc.room.depth]);
    expect([rx.x, rx.y, rx.z].map((v, i) => v - sc.rxPositions[i]!).every((x) => Math.abs(x) < 1e-12)).toBe(true);
    expect([tx.x, tx.y, tx.z].map((v, i) => v - sc.txPositions[i]!).every((x) => Math.abs(x) < 1e-12)).toBe(true);
    expect(validateConfig(defaults())).toEqual([]);
  });

  it('is in the JSON schema document with bounds, units, defaults and the restart flag', () => {
    const doc = schemaDocument() as SchemaNode;
    const g = doc.properties.environment.properties.site;
    expect(g.type).toBe('object');
    expect(g.additionalProperties).toBe(false);
    expect(g.description).toContain('Sites with several radios');
    expect(g.description).toContain('DEFAULT_ROOM');
    expect(Object.keys(g.properties)).toEqual(['known', 'room_width', 'room_depth', 'radios']);
    expect(g.properties.known).toMatchObject({ type: 'boolean', default: false, 'x-requires-restart': false });
    expect(g.properties.room_depth).toMatchObject({ type: 'number', minimum: 1, maximum: 100, default: 5, 'x-unit': 'm', 'x-requires-restart': false });
    const r = g.properties.radios;
    expect(r).toMatchObject({ type: 'array', minItems: 2, maxItems: 9, 'x-requires-restart': true });
    expect(r.default).toEqual(defaults().environment.site.radios);
    expect(r.items.required).toEqual(['id', 'role', 'x', 'y', 'z', 'yaw_deg']);
    expect(r.items.properties.z).toMatchObject({ type: 'number', minimum: 0, maximum: 20, 'x-unit': 'm' });
    expect(r.items.properties.yaw_deg).toMatchObject({ minimum: 0, exclusiveMaximum: 360 });
    expect(r.items.properties.antennas).toMatchObject({ type: 'integer', minimum: 1, maximum: 4, default: 3 });
    expect(r.items.properties.format.enum).toEqual(['intel5300', 'atheros', 'nexmon', 'esp32']);
  });

  it('is an extra of both response forms at its canonical path, and only in the extended forms', () => {
    const c = defaults();
    Object.assign(c.environment.site, structuredClone(MEASURED));
    expect((toFormA(c) as FormView).environment.site).toEqual(MEASURED);
    expect((toFormB(c) as FormView).environment.site).toEqual(MEASURED);
    expect((toFormA(c, { strict: true }) as FormView).environment.site).toBeUndefined();
    expect((toFormB(c, { strict: true }) as FormView).environment).toBeUndefined();
    // What was read can be PUT back in either form.
    for (const form of [toFormA(c), toFormB(c, { modelVersion: 'v1' })]) {
      const r = parseUpdate(form, { modelVersion: 'v1' });
      expect(r.ok).toBe(true);
      if (r.ok) for (const [k, v] of Object.entries(MEASURED)) expect(r.changes.find((ch) => ch.path === `${SITE}.${k}`)?.value, k).toEqual(v);
    }
  });
});

describe('siteGeometry', () => {
  it('is null while the site is unknown (the default)', async () => {
    const store = await ConfigStore.open({ dataDir: dir });
    expect(siteGeometry(store.get())).toBeNull();
    // Values set but `known` still false: still unknown.
    await store.update(site({ room_width: 9, radios: moved('rx1', { x: 4 }) }));
    expect(siteGeometry(store.get())).toBeNull();
  });

  it('maps a known site onto the model contract as its primary link, and its site row follows', async () => {
    const store = await ConfigStore.open({ dataDir: dir });
    await store.update(site(MEASURED));
    const g = siteGeometry(store.get());
    // The transmitter and the FIRST receiver (desk); the shelf is a second link the one-link model does not read.
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
    await store.update(site({ radios: moved('rx1', { x: 1 }) }));
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

  /** The field errors of a radios list as parsed (one field check). */
  function radiosErrors(radios: unknown): FieldError[] {
    const r = parseUpdate({ environment: { site: { radios } } });
    return r.ok ? [] : r.errors;
  }

  it('fills the optional fields and stores every radio in one key order', () => {
    const r = parseUpdate({
      environment: {
        site: {
          radios: [
            { yaw_deg: 270, z: 1, y: 4, x: 3, role: 'tx', id: 'ap' },
            { id: 'n1', role: 'rx', x: 1, y: 0, z: 1, yaw_deg: 90, format: 'esp32', antennas: 1 },
          ],
        },
      },
    });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const v = r.changes[0]!.value as RadioConfig[];
    expect(v).toEqual([radio('ap', 'tx', 3, 4, 1, 270), radio('n1', 'rx', 1, 0, 1, 90, { format: 'esp32', antennas: 1 })]);
    expect(Object.keys(v[0]!)).toEqual(['id', 'role', 'x', 'y', 'z', 'yaw_deg', 'antennas', 'spacing_m', 'format']);
  });

  it('refuses bad radios, naming the radio and the field', () => {
    const tx = { id: 'tx', role: 'tx', x: 3, y: 4.8, z: 1.2, yaw_deg: 270 };
    const rx = { id: 'rx1', role: 'rx', x: 3, y: 0.2, z: 1.2, yaw_deg: 90 };
    expect(radiosErrors('tx, rx1')).toEqual([
      { field: RADIOS, message: `${RADIOS} must be an array of radios, got a string ("tx, rx1")`, received_value: 'tx, rx1' },
    ]);
    expect(radiosErrors([tx])).toEqual([
      { field: RADIOS, message: `${RADIOS} must hold exactly one radio with role tx and at least one with role rx, got 1 tx and 0 rx`, received_value: 1 },
    ]);
    expect(radiosErrors([tx, { ...tx, id: 'tx2' }, rx]).map((e) => e.message)).toEqual([
      `${RADIOS} must hold exactly one radio with role tx and at least one with role rx, got 2 tx and 1 rx`,
    ]);
    expect(radiosErrors([tx, { ...rx, id: 'tx' }])).toMatchObject([
      { field: `${RADIOS}[1].id`, message: `${RADIOS}[1].id "tx" is used by an earlier radio; radio ids must be unique` },
    ]);
    // "-" joins a link's two ids: it may not be part of one.
    expect(radiosErrors([tx, { ...rx, id: 'rx-1' }])).toMatchObject([
      { field: `${RADIOS}[1].id`, message: `${RADIOS}[1].id must be 1-32 letters, digits or "_", got a string ("rx-1")` },
    ]);
    expect(radiosErrors([tx, { ...rx, role: 'receiver' }])).toMatchObject([
      { field: `${RADIOS}[1].role`, message: `${RADIOS}[1].role must be tx or rx, got a string ("receiver")` },
    ]);
    expect(radiosErrors([tx, { ...rx, yaw_deg: 360 }])).toMatchObject([
      { field: `${RADIOS}[1].yaw_deg`, message: `${RADIOS}[1].yaw_deg must be a number from 0 up to (not including) 360, got 360` },
    ]);
    expect(radiosErrors([tx, { ...rx, antennas: 2.5 }])).toMatchObject([
      { field: `${RADIOS}[1].antennas`, message: `${RADIOS}[1].antennas must be an integer between 1 and 4, got 2.5` },
    ]);
    expect(radiosErrors([tx, { ...rx, z: 21 }])).toMatchObject([
      { field: `${RADIOS}[1].z`, message: `${RADIOS}[1].z must be a number between 0 and 20, got 21` },
    ]);
    expect(radiosErrors([tx, { ...rx, x: '3' }])).toMatchObject([
      { field: `${RADIOS}[1].x`, message: `${RADIOS}[1].x must be a number between 0 and 100, got a string ("3")` },
    ]);
    expect(radiosErrors([tx, { ...rx, spacing_m: 0 }])).toMatchObject([{ field: `${RADIOS}[1].spacing_m` }]);
    expect(radiosErrors([tx, { ...rx, format: 'sim' }])).toMatchObject([
      { field: `${RADIOS}[1].format`, message: `${RADIOS}[1].format must be one of intel5300, atheros, nexmon, esp32, got a string ("sim")` },
    ]);
    expect(radiosErrors([tx, { ...rx, yaw_deg: undefined }])).toMatchObject([
      { field: `${RADIOS}[1].yaw_deg`, message: `${RADIOS}[1].yaw_deg is required: a number from 0 up to (not including) 360` },
    ]);
    expect(radiosErrors([tx, { ...rx, colour: 'red' }])).toMatchObject([{ field: `${RADIOS}[1].colour` }]);
    expect(radiosErrors([tx, 7])).toMatchObject([{ field: `${RADIOS}[1]` }]);
    expect(radiosErrors([tx, ...Array.from({ length: 9 }, (_, i) => ({ ...rx, id: `rx${i}` }))])).toMatchObject([
      { field: RADIOS, message: `${RADIOS} must hold at most 9 radios (1 tx and up to 8 rx), got 10` },
    ]);
    expect(radiosErrors([tx, ...Array.from({ length: 8 }, (_, i) => ({ ...rx, id: `rx${i}` }))])).toEqual([]);
  });

  it('refuses values out of their bounds', async () => {
    expect(parseUpdate({ environment: { site: { room_width: 0.5 } } })).toMatchObject({
      ok: false,
      errors: [{ field: `${SITE}.room_width`, message: `${SITE}.room_width must be between 1.0 and 100.0, got 0.5` }],
    });
    const store = await ConfigStore.open({ dataDir: dir });
    await store.update(site({ known: true })); // a config.json exists, so "unchanged" covers the file
    await refusedWith(
      store,
      [{ path: `${SITE}.room_depth`, value: 101 }],
      [{ field: `${SITE}.room_depth`, message: `${SITE}.room_depth must be between 1.0 and 100.0, got 101`, received_value: 101 }],
    );
  });

  it('refuses a radio outside the room', async () => {
    const store = await ConfigStore.open({ dataDir: dir });
    await store.update(site({ known: true }));
    await refusedWith(store, site({ radios: moved('rx1', { x: 7 }) }), [outside(1, 'rx1', 'x', '6.0', 7)]);
    await refusedWith(store, site({ radios: moved('tx', { y: 5.5 }) }), [outside(0, 'tx', 'y', '5.0', 5.5)]);
    // Each radio is fine for its own field: only the whole configuration shows the problem.
    expect(parseUpdate({ environment: { site: { radios: moved('rx1', { x: 7 }) } } }).ok).toBe(true);
  });

  it('refuses shrinking the room past a radio already stored, naming the radio', async () => {
    const store = await ConfigStore.open({ dataDir: dir });
    await store.update(site({ room_width: 10, radios: moved('rx3', { x: 8 }) }));
    await refusedWith(store, site({ room_width: 7 }), [outside(3, 'rx3', 'x', '7.0', 8)]);
    await refusedWith(store, site({ room_depth: 4.5 }), [outside(0, 'tx', 'y', '4.5', 4.8)]);
  });

  it('accepts moving a wall and the radios together, and radios on the walls', async () => {
    const store = await ConfigStore.open({ dataDir: dir });
    const radios = [radio('tx', 'tx', 2.5, 5, 1, 180), radio('rx1', 'rx', 0, 2, 1, 0)];
    const r = await store.update(site({ room_width: 2.5, radios }));
    expect(r.changes.map((c) => c.path)).toEqual([`${SITE}.room_width`, RADIOS]);
    expect(store.get().environment.site).toMatchObject({ room_width: 2.5, radios });
  });

  it('checks each queued update against the result of the one before it', async () => {
    const store = await ConfigStore.open({ dataDir: dir });
    const [first, second] = await Promise.allSettled([store.update(site({ radios: moved('rx3', { x: 5.9 }) })), store.update(site({ room_width: 5.85 }))]);
    expect(first.status).toBe('fulfilled');
    expect(second.status).toBe('rejected');
    expect(((second as PromiseRejectedResult).reason as ConfigUpdateError).errors.map((e) => e.field)).toEqual([`${RADIOS}[3].x`]);
    expect(store.get().environment.site.room_width).toBe(6);
    expect(store.get().environment.site.radios[3]!.x).toBe(5.9);
    expect(store.version).toBe(1);
    // And the queue goes on.
    await store.update(site({ room_width: 5.95 }));
    expect(store.get().environment.site.room_width).toBe(5.95);
  });

  it('is one rule of the general list, checked by validateConfig', () => {
    expect(CONFIG_RULES.map((r) => r.description)).toEqual([expect.stringContaining('environment.site')]);
    const c = defaults();
    c.environment.site.room_depth = 4;
    expect(validateConfig(c).map((e) => e.field)).toEqual([`${RADIOS}[0].y`]);
    c.environment.site.room_width = 5;
    expect(validateConfig(c).map((e) => e.field)).toEqual([`${RADIOS}[0].y`, `${RADIOS}[3].x`]);
  });

  it('sets aside a config.json whose site breaks the rule', async () => {
    const text = JSON.stringify({ version: 3, saved_at: 'x', settings: { environment: { site: { room_width: 2 } } } });
    await writeFile(join(dir, 'config.json'), text);
    const store = await ConfigStore.open({ dataDir: dir, now: () => Date.UTC(2026, 0, 31, 12) });
    expect(store.get()).toEqual(defaults());
    expect(store.version).toBe(0);
    expect(store.warnings).toHaveLength(1);
    expect(store.warnings[0]).toContain(`${RADIOS}[0].x must be between 0.0 and 2.0`);
    expect(await readdir(dir)).toEqual(['config.json.bad-2026-01-31T12-00-00.000Z']);
  });

  it('refuses to start with a --config overlay that, over the saved settings, puts a radio outside the room', async () => {
    const first = await ConfigStore.open({ dataDir: dir });
    await first.update(site({ room_width: 10, radios: moved('rx3', { x: 9 }) }));
    const file = join(dir, 'deploy.json');
    await writeFile(file, JSON.stringify({ environment: { site: { room_width: 8 } } }));
    const e = await ConfigStore.open({ dataDir: dir, configFile: file }).then(
      () => null,
      (err: unknown) => err,
    );
    expect(e).toBeInstanceOf(ConfigStartupError);
    expect((e as ConfigStartupError).errors.map((x) => x.field)).toEqual([`${RADIOS}[3].x`]);
    expect((e as ConfigStartupError).message).toContain(`--config ${file}: ${RADIOS}[3].x must be between 0.0 and 8.0`);
  });
});

describe('environment.site through the server', () => {
  const srv = suiteServer();

  it('GET /config/schema lists the site fields and their defaults', async () => {
    const r = await srv.s.api('GET', '/config/schema', { token: srv.token });
    expect(r.status).toBe(200);
    const g = r.body.data.schema.properties.environment.properties.site;
    expect(Object.keys(g.properties)).toEqual(['known', 'room_width', 'room_depth', 'radios']);
    expect(g.properties.radios).toMatchObject({ type: 'array', 'x-requires-restart': true });
    expect(r.body.data.defaults.environment.site).toEqual(defaults().environment.site);
  });

  it('stores a good site update and reads it back in both forms', async () => {
    const put = await srv.s.api('PUT', '/config', { token: srv.token, body: { environment: { site: MEASURED } } });
    expect(put.status, put.text).toBe(200);
    expect(put.body.data.updated_fields).toEqual(Object.keys(MEASURED).map((k) => `${SITE}.${k}`));
    // The sources read the radios when they open.
    expect(put.body.data.requires_restart).toBe(true);
    expect(put.body.data.configuration.environment.site).toEqual(MEASURED);
    const a = await srv.s.api('GET', '/config', { token: srv.token, form: 'a' });
    expect(a.body.environment.site).toEqual(MEASURED);
    const b = await srv.s.api('GET', '/config', { token: srv.token, form: 'b' });
    expect(b.body.data.environment.site).toEqual(MEASURED);
    expect(siteGeometry(srv.s.svc.config.get())).toEqual({
      roomWidth: 8.5,
      roomDepth: 4,
      receiver: { x: 0.5, y: 0.1, z: 2.1 },
      transmitter: { x: 8, y: 4, z: 0.9 },
    });
    // The live pipeline's settings (read by infer on its next batch) carry the primary link, and the status says so.
    expect(liveParams(srv.s.svc.config.get()).infer.site).toBe('8.5,4,0.5,0.1,2.1,8,4,0.9');
    expect(liveParams(srv.s.svc.config.get()).infer).toMatchObject({ receiverX: 0.5, receiverY: 0.1 });
    const status = async () => (await srv.s.api('GET', '/system/status', { token: srv.token })).body.data.components.neural_network.site_known;
    expect(await status()).toBe(true);

    const partial = await srv.s.api('PUT', '/config', { token: srv.token, form: 'a', body: { environment: { site: { known: false } } } });
    expect(partial.body).toEqual({ status: 'updated', changes_applied: [`${SITE}.known`], restart_required: false, validation_warnings: [] });
    expect((await srv.s.api('GET', '/config', { token: srv.token, form: 'a' })).body.environment.site).toEqual({ ...MEASURED, known: false });
    expect(siteGeometry(srv.s.svc.config.get())).toBeNull();
    expect(liveParams(srv.s.svc.config.get()).infer.site).toBe('');
    expect(await status()).toBe(false);
  });

  it('refuses a bad site with 422 VALIDATION_ERROR naming the field, in both forms, and changes nothing', async () => {
    const before = (await srv.s.api('GET', '/config', { token: srv.token, form: 'a' })).body;
    const version = srv.s.svc.config.version;
    const saved = await readFile(join(srv.s.dataDir, 'config.json'), 'utf8');
    const width = before.environment.site.room_width as number;
    const stored = MEASURED.radios;
    const cases: Array<{ body: unknown; field: string; message: string }> = [
      {
        // Shrinks the room below the router stored by the previous test (x = 8).
        body: { environment: { site: { room_width: 7 } } },
        field: `${RADIOS}[0].x`,
        message: `${RADIOS}[0].x must be between 0.0 and 7.0 (${SITE}.room_width: radio router must be inside the room), got 8`,
      },
      {
        body: { environment: { site: { radios: [stored[0], { ...stored[1], x: width + 1 }], known: true } } },
        field: `${RADIOS}[1].x`,
        message: `${RADIOS}[1].x must be between 0.0 and ${width} (${SITE}.room_width: radio desk must be inside the room), got ${width + 1}`,
      },
      {
        body: { environment: { site: { radios: [stored[0], { ...stored[1], y: 'near the door' }] } } },
        field: `${RADIOS}[1].y`,
        message: `${RADIOS}[1].y must be a number between 0 and 100, got a string ("near the door")`,
      },
      {
        body: { environment: { site: { radios: [stored[1]] } } },
        field: RADIOS,
        message: `${RADIOS} must hold exactly one radio with role tx and at least one with role rx, got 0 tx and 1 rx`,
      },
    ];
    for (const c of cases) {
      const b = await srv.s.api('PUT', '/config', { token: srv.token, body: c.body });
      expect(b.status, b.text).toBe(422);
      expect(b.body.success).toBe(false);
      expect(b.body.error.code).toBe('VALIDATION_ERROR');
      expect(b.body.error.details).toMatchObject({ field: c.field, reason: c.message });
      const a = await srv.s.api('PUT', '/config', { token: srv.token, body: c.body, form: 'a' });
      expect(a.status, a.text).toBe(422);
      expect(a.body.error.code).toBe('VALIDATION_ERROR');
      expect(a.body.error.message).toBe(c.message);
      expect(a.body.error.details.field_errors).toEqual([{ field: c.field, message: c.message, received_value: expect.anything() }]);
    }
    expect((await srv.s.api('GET', '/config', { token: srv.token, form: 'a' })).body).toEqual(before);
    expect(srv.s.svc.config.version).toBe(version);
    expect(await readFile(join(srv.s.dataDir, 'config.json'), 'utf8')).toBe(saved);
  });
});
