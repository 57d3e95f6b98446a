/**
 * Secrets in the configuration (issue 17, item 21): the password of an `mqtt://user:password@...`
 * source is masked for every reader and in every warning, and a client that PUTs back what it
 * read keeps the password instead of storing the mask.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseUpdate } from '../../src/config/forms.js';
import { maskErrors, maskUrlPassword, maskUrlPasswordsIn, restoreMasked } from '../../src/config/secrets.js';
import { ConfigStore, ConfigUpdateError } from '../../src/config/store.js';
import { withServer } from '../helpers/server.js';

/** A password no other text contains, so finding it anywhere is a leak. */
const PASSWORD = 'Zq8-hunter2:x@y';
const SOURCE = `mqtt://csi:${PASSWORD}@broker.example:1883/csi/%23?format=esp32`;
const MASKED = 'mqtt://csi:***@broker.example:1883/csi/%23?format=esp32';

describe('masking URL passwords', () => {
  it("masks the password of a URL's userinfo and nothing else", () => {
    expect(maskUrlPassword(SOURCE)).toBe(MASKED);
    // The userinfo ends at the last @ before the path, as the MQTT source reads it; # does not end it.
    expect(maskUrlPassword('mqtt://u:p@ss#w@host/t#?format=esp32')).toBe('mqtt://u:***@host/t#?format=esp32');
    expect(maskUrlPassword('mqtts://u:pw@h?format=nexmon')).toBe('mqtts://u:***@h?format=nexmon');
    for (const same of [
      'sim?seed=3',
      'mqtt://host/t?format=esp32',
      'mqtt://user@host/t?format=esp32',
      'file:/x@y:z',
      'udp://0.0.0.0:5500?format=esp32',
      'mqtt://host/a@b:c',
      'mqtt://u:@host/t',
    ]) {
      expect(maskUrlPassword(same)).toBe(same);
    }
    expect(maskUrlPassword(42)).toBe(42);
  });

  it('masks URL passwords inside free text and field errors', () => {
    expect(maskUrlPasswordsIn(`hardware.source must be a source URI, got "${SOURCE}"`)).not.toContain('hunter2');
    expect(maskUrlPasswordsIn('see mqtt://a:b@c/d and mqtt://e:f@g/h')).toBe('see mqtt://a:***@c/d and mqtt://e:***@g/h');
    const [e] = maskErrors([{ field: 'hardware.source', message: `bad value ${JSON.stringify(SOURCE)}`, received_value: SOURCE }]);
    expect(JSON.stringify(e)).not.toContain('hunter2');
    expect(e!.received_value).toBe(MASKED);
    // A message that quotes the value cut short, before the @, still shows none of the password.
    const long = 'Sekr3t'.repeat(12);
    const r = parseUpdate({ hardware: { source: `ftp://csi:${long}@host/x` }, streaming: { mqtt_url: `mqtt://csi:${long}@host:1883` } });
    expect(r.ok).toBe(false);
    expect(r.ok ? [] : r.errors.map((x) => x.field).sort()).toEqual(['hardware.source', 'streaming.mqtt_url']);
    expect(JSON.stringify(r)).not.toContain('Sekr3t');
  });

  it('reads the mask written back as the password held, for the same user only', () => {
    expect(restoreMasked('hardware.source', MASKED, SOURCE)).toEqual({ value: SOURCE });
    // Another topic, same user: the held password goes with it.
    expect(restoreMasked('hardware.source', 'mqtt://csi:***@other:1883/x?format=nexmon', SOURCE)).toEqual({
      value: `mqtt://csi:${PASSWORD}@other:1883/x?format=nexmon`,
    });
    // A new password is a new password.
    expect(restoreMasked('hardware.source', 'mqtt://csi:new@broker.example/t?format=esp32', SOURCE)).toEqual({
      value: 'mqtt://csi:new@broker.example/t?format=esp32',
    });
    const other = restoreMasked('hardware.source', 'mqtt://admin:***@broker.example/t?format=esp32', SOURCE);
    expect('error' in other && other.error.field).toBe('hardware.source');
    const none = restoreMasked('hardware.source', MASKED, 'sim');
    expect('error' in none).toBe(true);
    // Fields that hold no secrets are never touched.
    expect(restoreMasked('environment.name', 'mqtt://a:***@b', 'x')).toEqual({ value: 'mqtt://a:***@b' });
  });
});

it('masks and restores every password of a list of sources (one URI per link)', () => {
  const list = `mqtt://a:pw1@broker/csi/rx1?format=esp32&link=rx1\n  mqtt://b:pw2@broker/csi/rx2?format=esp32&link=rx2`;
  const masked = maskUrlPassword(list);
  expect(masked).toBe(`mqtt://a:***@broker/csi/rx1?format=esp32&link=rx1\n  mqtt://b:***@broker/csi/rx2?format=esp32&link=rx2`);
  expect(restoreMasked('hardware.source', masked, list)).toEqual({ value: list });
  // A mask where the held list has no password for that user is refused, naming the whole value.
  const wrong = restoreMasked('hardware.source', `${masked} mqtt://c:***@broker/x?format=esp32&link=rx3`, list);
  expect('error' in wrong && wrong.error.received_value).toBe(`${masked} mqtt://c:***@broker/x?format=esp32&link=rx3`);
  // The schema takes such a list, and every source alone, mqtts:// included.
  for (const ok of [
    list,
    'mqtts://u:p@broker/t?format=esp32',
    'udp://0.0.0.0:5501?format=intel5300&link=rx1 udp://0.0.0.0:5502?format=intel5300&link=rx2',
    'file:/data/my capture.dat',
    'sim?links=1',
  ]) {
    expect(parseUpdate({ hardware: { source: ok } }).ok, ok).toBe(true);
  }
  for (const bad of ['sim udp://0.0.0.0:1?format=esp32', 'udp://0.0.0.0:1?format=esp32 stdin', 'http://example.com']) {
    expect(parseUpdate({ hardware: { source: bad } }).ok, bad).toBe(false);
  }
});

describe('the configuration store', () => {
  it('keeps the real password when the mask is written back, and refuses a mask that stands for nothing', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'csipose-secret-'));
    try {
      const store = await ConfigStore.open({ dataDir: dir });
      const set = parseUpdate({ hardware: { source: SOURCE } });
      if (!set.ok) throw new Error(JSON.stringify(set.errors));
      await store.update(set.changes);
      const back = parseUpdate({ hardware: { source: MASKED } });
      if (!back.ok) throw new Error(JSON.stringify(back.errors));
      const r = await store.update(back.changes);
      expect(r.changes).toEqual([]);
      expect(store.get().hardware.source).toBe(SOURCE);
      expect(JSON.parse(await readFile(join(dir, 'config.json'), 'utf8')).settings.hardware.source).toBe(SOURCE);

      const stranger = parseUpdate({ hardware: { source: 'mqtt://root:***@broker.example/t?format=esp32' } });
      if (!stranger.ok) throw new Error(JSON.stringify(stranger.errors));
      const refused = await store.update(stranger.changes).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(ConfigUpdateError);
      expect((refused as ConfigUpdateError).errors[0]!.field).toBe('hardware.source');
      expect(store.get().hardware.source).toBe(SOURCE);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('masks the password in its startup warnings (which the service logs)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'csipose-secret-'));
    try {
      const store = await ConfigStore.open({ dataDir: dir });
      const set = parseUpdate({ hardware: { source: SOURCE } });
      if (!set.ok) throw new Error(JSON.stringify(set.errors));
      await store.update(set.changes);
      const overlay = join(dir, 'overlay.json');
      await writeFile(overlay, JSON.stringify({ hardware: { source: 'mqtt://csi:0therSecret99@broker.example/t?format=esp32' } }));
      const reopened = await ConfigStore.open({ dataDir: dir, configFile: overlay });
      expect(reopened.warnings.length).toBe(1);
      expect(reopened.warnings[0]).toContain('hardware.source');
      expect(reopened.warnings[0]).not.toContain('hunter2');
      expect(reopened.warnings[0]).not.toContain('0therSecret99');
      // The overlay still applies with its real password.
      expect(reopened.get().hardware.source).toBe('mqtt://csi:0therSecret99@broker.example/t?format=esp32');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('GET and PUT /config with a password in the source', () => {
  it('shows every reader the password masked, in both forms, and a PUT echoing the mask keeps the password', async () => {
    await withServer({}, async (s) => {
      const admin = await s.login();
      const viewer = (await s.apiKey(admin, 'viewer')).key;
      const put = await s.api('PUT', '/config', { token: admin, body: { hardware: { source: SOURCE } } });
      expect(put.status, put.text).toBe(200);
      expect(put.text).not.toContain('hunter2');
      expect(put.body.data.configuration.hardware.source).toBe(MASKED);

      for (const who of [{ token: admin }, { apiKey: viewer }]) {
        for (const form of ['a', 'b'] as const) {
          const r = await s.api('GET', '/config', { ...who, form });
          expect(r.status).toBe(200);
          expect(r.text).not.toContain('hunter2');
          const cfg = form === 'a' ? r.body : r.body.data;
          expect(cfg.hardware.source).toBe(MASKED);
        }
      }
      expect(s.svc.config.get().hardware.source).toBe(SOURCE);

      // The dashboard's round trip: read everything, change one thing, write everything back.
      const read = await s.api('GET', '/config', { token: admin, form: 'a' });
      const echo = { ...read.body, environment: { ...read.body.environment, name: 'Ward 5' } };
      const saved = await s.api('PUT', '/config', { token: admin, body: echo, form: 'a' });
      expect(saved.status, saved.text).toBe(200);
      expect(saved.body.changes_applied).toEqual(['environment.name']);
      expect(s.svc.config.get().hardware.source).toBe(SOURCE);
      expect(JSON.parse(await readFile(join(s.dataDir, 'config.json'), 'utf8')).settings.hardware.source).toBe(SOURCE);

      // A mask for a user whose password is not held is refused, naming the field, echoing no secret.
      const stranger = await s.api('PUT', '/config', { token: admin, body: { hardware: { source: 'mqtt://root:***@broker.example/t?format=esp32' } } });
      expect(stranger.status).toBe(422);
      expect(stranger.body.error.details.field).toBe('hardware.source');
      expect(s.svc.config.get().hardware.source).toBe(SOURCE);

      // A refused value never comes back with its password in it either.
      const bad = await s.api('PUT', '/config', { token: admin, body: { hardware: { source: `ftp://csi:${PASSWORD}@host/x` } }, form: 'a' });
      expect(bad.status).toBe(422);
      expect(bad.text).not.toContain('hunter2');
    });
  });
});
