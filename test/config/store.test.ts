import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseUpdate } from '../../src/config/forms.js';
import { defaults } from '../../src/config/schema.js';
import { ConfigStartupError, ConfigStore, ConfigUpdateError, type ConfigChangeEvent } from '../../src/config/store.js';
import type { ConfigChange } from '../../src/config/validate.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'csipose-config-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Fixed clock: 2026-01-31T12:00:00.000Z. */
const now = (): number => Date.UTC(2026, 0, 31, 12);

function changes(body: unknown): ConfigChange[] {
  const r = parseUpdate(body);
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.changes;
}

describe('ConfigStore', () => {
  it('starts on defaults in an empty directory, with no warnings and no file', async () => {
    const store = await ConfigStore.open({ dataDir: join(dir, 'nested', 'data') });
    expect(store.get()).toEqual(defaults());
    expect(store.warnings).toEqual([]);
    expect(store.version).toBe(0);
    expect(store.pendingRestart).toEqual([]);
    expect(await readdir(join(dir, 'nested', 'data'))).toEqual([]);
  });

  it('hands out a deep-frozen snapshot that stays the same object until an update', async () => {
    const store = await ConfigStore.open({ dataDir: dir });
    const a = store.get();
    expect(Object.isFrozen(a)).toBe(true);
    expect(Object.isFrozen(a.detection)).toBe(true);
    expect(Object.isFrozen(a.environment.zones)).toBe(true);
    expect(() => {
      (a.detection as { max_persons: number }).max_persons = 9;
    }).toThrow(TypeError);
    expect(store.get()).toBe(a);
    await store.update(changes({ detection: { max_persons: 2 } }));
    expect(store.get()).not.toBe(a);
    expect(a.detection.max_persons).toBe(4);
    expect(store.get().detection.max_persons).toBe(2);
  });

  it('persists updates and a new store on the same directory reads them back', async () => {
    const first = await ConfigStore.open({ dataDir: dir, now });
    const zones = [
      {
        id: 'bed',
        name: 'bed',
        polygon: [
          [0, 0],
          [2, 0],
          [2, 1],
        ] as Array<[number, number]>,
      },
    ];
    // A zone without a name is stored with its id as name.
    const r = await first.update(
      changes({
        detection: { enable_tracking: false },
        environment: { zones: [{ id: 'bed', polygon: zones[0]!.polygon }] },
        hardware: { subcarrier_count: 56 },
      }),
    );
    expect(r.version).toBe(1);
    expect(r.appliedAt).toBe('2026-01-31T12:00:00.000Z');
    await first.update(changes({ detection: { confidence_threshold: 0.7 } }));
    expect(first.version).toBe(2);

    const saved = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8'));
    expect(saved).toEqual({
      version: 2,
      saved_at: '2026-01-31T12:00:00.000Z',
      settings: { environment: { zones }, detection: { confidence_threshold: 0.7, tracking_enabled: false }, hardware: { subcarrier_count: 56 } },
    });
    // No temp files left behind.
    expect(await readdir(dir)).toEqual(['config.json']);

    const second = await ConfigStore.open({ dataDir: dir });
    expect(second.warnings).toEqual([]);
    expect(second.version).toBe(2);
    const expected = defaults();
    expected.detection.tracking_enabled = false;
    expected.detection.confidence_threshold = 0.7;
    expected.environment.zones = zones;
    expected.hardware.subcarrier_count = 56;
    expect(second.get()).toEqual(expected);
    // Restart settings loaded at start are what the system starts with: nothing pending.
    expect(second.pendingRestart).toEqual([]);
  });

  it('reports only values that changed, in schema order, and bumps the version only then', async () => {
    const store = await ConfigStore.open({ dataDir: dir });
    const r = await store.update(changes({ privacy: { anonymize_data: true }, domain: 'general', detection: { max_persons: 4, confidence_threshold: 0.6 } }));
    expect(r.changes).toEqual([
      { path: 'detection.confidence_threshold', value: 0.6, restart: false },
      { path: 'privacy.anonymize_data', value: true, restart: false },
    ]);
    expect(r.restartRequired).toBe(false);
    expect(r.version).toBe(1);
    const noop = await store.update(changes({ detection: { confidence_threshold: 0.6 } }));
    expect(noop.changes).toEqual([]);
    expect(noop.version).toBe(1);
  });

  it('flags restart-needing changes and keeps them pending until markStarted', async () => {
    const store = await ConfigStore.open({ dataDir: dir });
    const r = await store.update(changes({ hardware: { source: 'udp://0.0.0.0:5500?format=esp32', csi_sampling_rate: 200 }, detection: { max_persons: 2 } }));
    expect(r.restartRequired).toBe(true);
    expect(r.changes.map((c) => [c.path, c.restart])).toEqual([
      ['detection.max_persons', false],
      ['hardware.source', true],
      ['hardware.csi_sampling_rate', true],
    ]);
    expect(store.pendingRestart).toEqual([
      { path: 'hardware.source', value: 'udp://0.0.0.0:5500?format=esp32', restart: true },
      { path: 'hardware.csi_sampling_rate', value: 200, restart: true },
    ]);
    const live = await store.update(changes({ detection: { max_persons: 3 } }));
    expect(live.restartRequired).toBe(false);
    expect(store.pendingRestart).toHaveLength(2);
    // Setting a restart field back to what the system runs with leaves nothing to restart for.
    await store.update(changes({ hardware: { csi_sampling_rate: 100 } }));
    expect(store.pendingRestart.map((c) => c.path)).toEqual(['hardware.source']);
    store.markStarted();
    expect(store.pendingRestart).toEqual([]);
  });

  it('emits each effective update on changes$ and completes on close', async () => {
    const store = await ConfigStore.open({ dataDir: dir });
    const seen: ConfigChangeEvent[] = [];
    let completed = false;
    store.changes$.subscribe({ next: (e) => seen.push(e), complete: () => (completed = true) });
    await store.update(changes({ streaming: { status_interval_seconds: 10 } }));
    await store.update(changes({ streaming: { status_interval_seconds: 10 } })); // no change, no event
    await store.update(changes({ neural_network: { model_path: 'models/b.onnx' } }));
    expect(seen).toHaveLength(2);
    expect(seen[0]).toMatchObject({ version: 1, restartRequired: false, changes: [{ path: 'streaming.status_interval_seconds', value: 10, restart: false }] });
    expect(seen[0]!.config.streaming.status_interval_seconds).toBe(10);
    expect(seen[1]).toMatchObject({ version: 2, restartRequired: true, changes: [{ path: 'neural_network.model_path', value: 'models/b.onnx' }] });
    expect(seen[1]!.config).toBe(store.get());
    store.close();
    expect(completed).toBe(true);
  });

  it('applies concurrent updates one after the other, none lost', async () => {
    const store = await ConfigStore.open({ dataDir: dir });
    const results = await Promise.all([
      store.update(changes({ detection: { max_persons: 1 } })),
      store.update(changes({ detection: { tracking_max_age: 99 } })),
      store.update(changes({ detection: { max_persons: 7 } })),
    ]);
    expect(results.map((r) => r.version)).toEqual([1, 2, 3]);
    expect(store.get().detection.max_persons).toBe(7);
    expect(store.get().detection.tracking_max_age).toBe(99);
    const again = await ConfigStore.open({ dataDir: dir });
    expect(again.get().detection).toMatchObject({ max_persons: 7, tracking_max_age: 99 });
  });

  it('refuses changes that do not validate, leaving everything as it was', async () => {
    const store = await ConfigStore.open({ dataDir: dir });
    const before = store.get();
    const err = await store
      .update([
        { path: 'detection.max_persons', value: 11 },
        { path: 'detection.nope', value: 1 },
      ])
      .catch((e) => e);
    expect(err).toBeInstanceOf(ConfigUpdateError);
    expect((err as ConfigUpdateError).errors.map((e) => e.field)).toEqual(['detection.max_persons', 'detection.nope']);
    expect(store.get()).toBe(before);
    expect(store.version).toBe(0);
    // The queue keeps working after a refusal.
    await store.update([{ path: 'detection.max_persons', value: 5 }]);
    expect(store.get().detection.max_persons).toBe(5);
  });

  it('keeps the old configuration when config.json cannot be written', async () => {
    const store = await ConfigStore.open({ dataDir: dir });
    await rm(dir, { recursive: true });
    await writeFile(dir, 'a file where the directory was');
    try {
      await expect(store.update([{ path: 'detection.max_persons', value: 5 }])).rejects.toThrow();
      expect(store.get().detection.max_persons).toBe(4);
      expect(store.version).toBe(0);
    } finally {
      await rm(dir, { force: true });
    }
  });

  describe('a bad config.json', () => {
    const cases: Array<[string, string, RegExp]> = [
      ['truncated JSON', '{"version": 1, "settings": {"detection": ', /is not valid JSON/],
      ['not an object', '[1, 2]', /is not a JSON object/],
      [
        'an invalid value',
        JSON.stringify({ version: 1, saved_at: 'x', settings: { detection: { confidence_threshold: 7 } } }),
        /detection\.confidence_threshold must be between 0\.0 and 1\.0/,
      ],
      [
        'an unknown field',
        JSON.stringify({ version: 1, saved_at: 'x', settings: { detection: { speed: 1 } } }),
        /detection\.speed is not a configuration field/,
      ],
      ['a bad version', JSON.stringify({ version: -1, saved_at: 'x', settings: {} }), /version -1/],
    ];
    for (const [name, text, reason] of cases) {
      it(`(${name}) is set aside; the service starts on defaults with a warning`, async () => {
        await writeFile(join(dir, 'config.json'), text);
        const store = await ConfigStore.open({ dataDir: dir, now });
        expect(store.get()).toEqual(defaults());
        expect(store.version).toBe(0);
        expect(store.warnings).toHaveLength(1);
        expect(store.warnings[0]).toMatch(reason);
        const aside = 'config.json.bad-2026-01-31T12-00-00.000Z';
        expect(store.warnings[0]).toContain(aside);
        expect((await readdir(dir)).sort()).toEqual([aside]);
        expect(await readFile(join(dir, aside), 'utf8')).toBe(text);
        // The next update writes a fresh file.
        await store.update([{ path: 'domain', value: 'retail' }]);
        expect((await readdir(dir)).sort()).toEqual(['config.json', aside]);
      });
    }

    it('never overwrites an earlier set-aside file', async () => {
      await writeFile(join(dir, 'config.json'), 'garbage 1');
      await ConfigStore.open({ dataDir: dir, now });
      await writeFile(join(dir, 'config.json'), 'garbage 2');
      const store = await ConfigStore.open({ dataDir: dir, now });
      expect(store.warnings[0]).toContain('config.json.bad-2026-01-31T12-00-00.000Z-1');
      expect(await readFile(join(dir, 'config.json.bad-2026-01-31T12-00-00.000Z'), 'utf8')).toBe('garbage 1');
      expect(await readFile(join(dir, 'config.json.bad-2026-01-31T12-00-00.000Z-1'), 'utf8')).toBe('garbage 2');
    });
  });

  it('reads a hand-written config.json without the envelope', async () => {
    await writeFile(join(dir, 'config.json'), JSON.stringify({ domain: 'healthcare', privacy: { data_retention_days: 90 } }));
    const store = await ConfigStore.open({ dataDir: dir });
    expect(store.warnings).toEqual([]);
    expect(store.get().domain).toBe('healthcare');
    expect(store.get().privacy.data_retention_days).toBe(90);
  });

  describe('--config overlay', () => {
    it('applies over defaults and config.json, in any form names, without being persisted', async () => {
      const first = await ConfigStore.open({ dataDir: dir });
      await first.update(changes({ detection: { confidence_threshold: 0.6, max_persons: 2 } }));
      const file = join(dir, 'deploy.json');
      await writeFile(file, JSON.stringify({ environment_id: 'ward-7', detection: { confidence_threshold: 0.8, enable_tracking: false } }));
      const store = await ConfigStore.open({ dataDir: dir, configFile: file });
      expect(store.get().environment.id).toBe('ward-7');
      expect(store.get().detection).toMatchObject({ confidence_threshold: 0.8, max_persons: 2, tracking_enabled: false });
      expect(store.warnings).toEqual([
        `--config ${file} sets detection.confidence_threshold to 0.8 over 0.6 saved through the API in ${join(dir, 'config.json')}`,
      ]);
      const saved = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8'));
      expect(saved.settings).toEqual({ detection: { confidence_threshold: 0.6, max_persons: 2 } });
    });

    it('is a startup error naming the field when a value is invalid', async () => {
      const file = join(dir, 'deploy.json');
      await writeFile(file, JSON.stringify({ detection: { confidence_threshold: 2, enable_tracking: 'no' }, hardware: { antena_count: 2 } }));
      const err = await ConfigStore.open({ dataDir: dir, configFile: file }).catch((e) => e);
      expect(err).toBeInstanceOf(ConfigStartupError);
      const e = err as ConfigStartupError;
      expect(e.code).toBe('CONFIG_ERROR');
      expect(e.file).toBe(file);
      expect(e.errors.map((x) => x.field).sort()).toEqual(['detection.confidence_threshold', 'detection.enable_tracking', 'hardware.antena_count']);
      expect(e.message).toContain(`--config ${file}: `);
      expect(e.message).toContain('detection.confidence_threshold must be between 0.0 and 1.0, got 2');
      expect(e.message).toContain('hardware.antena_count is not a configuration field (did you mean antenna_count?)');
    });

    it('is a startup error when missing or not JSON', async () => {
      const missing = join(dir, 'missing.json');
      await expect(ConfigStore.open({ dataDir: dir, configFile: missing })).rejects.toThrow(/--config .*missing\.json: cannot read the file/);
      const broken = join(dir, 'broken.json');
      await writeFile(broken, '{ "domain": ');
      await expect(ConfigStore.open({ dataDir: dir, configFile: broken })).rejects.toThrow(/--config .*broken\.json: not valid JSON/);
      await writeFile(broken, '"healthcare"');
      await expect(ConfigStore.open({ dataDir: dir, configFile: broken })).rejects.toThrow(/must be a JSON object/);
    });
  });
});
