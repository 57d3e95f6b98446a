import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { firstValueFrom, toArray } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CsiDecoder, DecodeStats, DecoderOptions } from '../../src/csi/decoder.js';
import type { CsiFrame } from '../../src/csi/frame.js';
import { CAPTURE_FORMATS, DECODERS, formatFromFileName, isCaptureFormat, registerDecoder, type CaptureFormat } from '../../src/decoders/registry.js';

/**
 * A format no file of the repository knows: one record per byte, its value the CSI's real part.
 * Registering it is the only change; everything below finds it through the table.
 */
class FakeDecoder implements CsiDecoder {
  readonly format = 'fakecsi' as CaptureFormat;
  readonly stats: DecodeStats = { records: 0, skipped: 0, bytes: 0 };
  constructor(private readonly opts: DecoderOptions) {}
  push(chunk: Uint8Array, emit: (f: CsiFrame) => void): void {
    for (const b of chunk) {
      const index = this.stats.records++;
      this.stats.bytes++;
      emit({
        format: this.format,
        sourceId: this.opts.sourceId ?? 'unknown',
        environmentId: this.opts.environmentId ?? 'default',
        index,
        time: 0,
        deviceTime: index,
        clockUs: index * 10_000,
        seq: index,
        rssi: [NaN],
        noise: NaN,
        channel: NaN,
        bandwidthMhz: 20,
        nRx: 1,
        nTx: 1,
        nSub: 1,
        subcarriers: Int16Array.of(1),
        csi: Float32Array.of(b, 0),
      });
    }
  }
  end(): void {}
}

const FAKE = 'fakecsi';
let unregister: () => void;
let dir: string;
let capture: string;

beforeAll(() => {
  unregister = registerDecoder({
    name: FAKE,
    description: 'fake one-byte records',
    stream: (opts) => new FakeDecoder(opts),
    datagram: (opts) => new FakeDecoder(opts),
    fileHints: [{ pattern: /\.fake$/, strength: 3 }],
    message: 'byte',
  });
  dir = mkdtempSync(join(tmpdir(), 'csipose-registry-'));
  capture = join(dir, 'room.fake');
  writeFileSync(capture, Uint8Array.of(3, 1, 4, 1, 5));
});

afterAll(() => {
  unregister();
  rmSync(dir, { recursive: true, force: true });
});

describe('the table of capture formats', () => {
  it('holds the shipped formats in the order lists show them', () => {
    expect([...DECODERS.keys()].slice(0, 4)).toEqual(['intel5300', 'atheros', 'nexmon', 'esp32']);
  });

  it('guesses a format from a file name as before: extension, then `ath`, then .dat or `csi`', () => {
    const cases: Array<[string, string | undefined]> = [
      ['rx1.pcap', 'nexmon'],
      ['RX1.PCAPNG', 'nexmon'],
      ['csi.pcap', 'nexmon'],
      ['esp.csv', 'esp32'],
      ['ath_csi.log', 'esp32'],
      ['serial.txt', 'esp32'],
      ['ath_csi.dat', 'atheros'],
      ['path/ath9k.bin', 'atheros'],
      ['log.dat', 'intel5300'],
      ['my_csi.bin', 'intel5300'],
      ['room.bin', undefined],
    ];
    for (const [path, format] of cases) expect(formatFromFileName(path), path).toBe(format);
  });

  it('refuses a second format of the same name', () => {
    expect(() => registerDecoder({ ...DECODERS.get('esp32')!, description: 'again' })).toThrow(/already registered/);
  });
});

describe('a format registered in the table, and nowhere else, is accepted everywhere', () => {
  it('is a radio format the configuration accepts (and a name it does not know is refused)', async () => {
    const { defaults } = await import('../../src/config/schema.js');
    const { validateChange } = await import('../../src/config/validate.js');
    const withFormat = (format: string) => {
      const r = validateChange(
        'environment.site.radios',
        defaults().environment.site.radios.map((x) => ({ ...x, format })),
      );
      return r.ok ? [] : r.errors.filter((e) => e.field.endsWith('.format'));
    };
    expect(withFormat(FAKE)).toEqual([]);
    expect(withFormat('nosuchformat').length).toBeGreaterThan(0);
    expect(CAPTURE_FORMATS).toContain(FAKE);
    expect(isCaptureFormat(FAKE)).toBe(true);
  });

  it('is a decoder stage of pipeline strings, which decodes with its stream reader', async () => {
    // Loaded after registration, as a build that brings its own decoders would load them.
    const { registry } = await import('../../pipelines/index.js');
    const { buildPipeline } = await import('../../src/cli/build.js');
    const spec = registry.operators.get(FAKE);
    expect(spec).toMatchObject({ input: 'bytes', output: 'frame', summary: 'decode fake one-byte records from raw bytes' });

    const built = buildPipeline(`file:${capture} | ${FAKE} source=x | ndjson`, registry, { requireSink: true });
    expect(built.sourceKind).toBe('bytes');
    const frames = (await firstValueFrom(built.open({ speed: 0 }).pipe(toArray<unknown>()))) as CsiFrame[];
    expect(frames.map((f) => f.csi[0])).toEqual([3, 1, 4, 1, 5]);
    expect(frames[0]!.sourceId).toBe('x');

    // The hint of a missing decoder stage lists it with the others.
    expect(() => buildPipeline('file:/tmp/raw.bin | sanitize | ndjson', registry)).toThrow(
      /add a decoder stage first: intel5300, atheros, nexmon, esp32 or fakecsi/,
    );
  });

  it('is a format of source URIs: guessed from a file name by its hints, named by ?format=', async () => {
    const { parseSource } = await import('../../src/sources/uri.js');
    const { parseMqttUri } = await import('../../src/sources/mqtt.js');
    const guessed = parseSource(`file:${capture}`);
    expect(guessed.emits).toEqual(['bytes', 'frame']);
    const frames = (await firstValueFrom(guessed.open('frame', { speed: 0 }).pipe(toArray<unknown>()))) as CsiFrame[];
    expect(frames).toHaveLength(5);
    expect(frames[0]!.sourceId).toBe(`file:${capture}`);

    expect(parseSource(`file:${dir}/x.bin?format=${FAKE}`).emits).toContain('frame');
    expect(parseSource(`udp://127.0.0.1:0?format=${FAKE}`).emits).toEqual(['frame']);
    expect(() => parseSource(`file:${dir}/x.bin?format=nope`)).toThrow(/formats: intel5300, atheros, nexmon, esp32, fakecsi/);
    // Its records fit one MQTT message (it has a `message`), so MQTT takes it too.
    expect(parseMqttUri(`mqtt://127.0.0.1/csi/x?format=${FAKE}`).format).toBe(FAKE);
    expect(() => parseMqttUri('mqtt://127.0.0.1/csi/x?format=atheros')).toThrow(
      'format "atheros" cannot come over mqtt: a message holds one nexmon payload or one esp32 line or one fakecsi byte',
    );
  });

  it('is a choice, usage word and format of the command line', async () => {
    // The commands as src/cli/main.ts adds them (main.ts itself reads the built package's version).
    const { calibrateCommand } = await import('../../src/cli/calibrate.js');
    const { decodeCommand, runDecode } = await import('../../src/cli/decode.js');
    const formatOption = calibrateCommand().options.find((o) => o.long === '--format')!;
    expect(formatOption.argChoices).toEqual(['intel5300', 'atheros', 'nexmon', 'esp32', FAKE]);
    const decode = decodeCommand();
    expect(decode.options.find((o) => o.long === '--format')!.description).toBe(`intel5300 | atheros | nexmon | esp32 | ${FAKE}`);

    let out = '';
    let err = '';
    const sink = (add: (s: string) => void) =>
      new Writable({
        write(chunk, _enc, done) {
          add(String(chunk));
          done();
        },
      });
    const status = await runDecode(
      FAKE,
      capture,
      sink((s) => (out += s)),
      sink((s) => (err += s)),
    );
    expect(status).toBe(0);
    expect(out.trim().split('\n')).toHaveLength(5);
    expect(err).toBe('skipped 0 records\n');
    expect(
      await runDecode(
        'nope',
        capture,
        sink(() => undefined),
        sink((s) => (err = s)),
      ),
    ).toBe(2);
    expect(err).toContain(`(intel5300, atheros, nexmon, esp32, ${FAKE})`);
  });
});
