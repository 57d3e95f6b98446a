import { describe, expect, it } from 'vitest';
import type { CsiFrame } from '../../src/csi/frame.js';
import { ESP32_MAX_LINE, Esp32Decoder, decodeEsp32, esp32Subcarriers } from '../../src/decoders/esp32.js';
import { mulberry32 } from '../helpers/decoding.js';
import { type DecodedFacts, describeWithSamples, groundTruth, sampleBytes } from '../helpers/samples.js';

function run(dec: Esp32Decoder, chunks: Iterable<Uint8Array>): CsiFrame[] {
  const frames: CsiFrame[] = [];
  const emit = (f: CsiFrame) => frames.push(f);
  for (const c of chunks) dec.push(c, emit);
  dec.end(emit);
  return frames;
}

function* sized(b: Uint8Array, size: (k: number) => number): Generator<Uint8Array> {
  for (let i = 0, k = 0; i < b.length; k++) {
    const n = Math.max(1, size(k));
    yield b.subarray(i, i + n);
    i += n;
  }
}

function digest(f: CsiFrame): string {
  return JSON.stringify({ ...f, subcarriers: Array.from(f.subcarriers), csi: Array.from(f.csi) });
}

/** The raw int8 values as recorded (imaginary first) from a frame's (re, im) samples. */
function rawValues(f: CsiFrame): number[] {
  const out: number[] = [];
  for (let i = 0; i < f.nSub; i++) out.push(f.csi[2 * i + 1]!, f.csi[2 * i]!);
  return out;
}

const span = (a: number, b: number) => Array.from({ length: b - a + 1 }, (_, i) => a + i);
const enc = new TextEncoder();

// ---- the real ESP32-CSI-Tool capture ----------------------------------------------------------

describeWithSamples('ESP32-CSI-Tool: example_csi.csv', () => {
  const bytes = sampleBytes('esp32/example_csi.csv');
  const facts = groundTruth<DecodedFacts>('decoded_facts.json')['example_csi.csv'];
  const dec = new Esp32Decoder({ sourceId: 'example', environmentId: 'lab' });
  const frames = run(dec, [bytes]);

  it('decodes all 13 rows and skips nothing', () => {
    expect(frames).toHaveLength(facts.rows);
    expect(dec.stats).toEqual({ records: 13, skipped: 0, bytes: facts.bytes });
    expect(frames.map((f) => f.index)).toEqual(span(0, 12));
    expect(frames.map((f) => f.seq)).toEqual(span(0, 12));
  });

  it('keeps every named column of the first row as recorded', () => {
    const f = frames[0]!;
    const expected: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(facts.first_meta as Record<string, string>)) {
      expected[k] = ['type', 'role', 'mac'].includes(k) ? v : Number(v);
    }
    expect(f.meta).toEqual({ ...expected, layout: 'esp32-csi-tool' });
    expect(f.meta!.real_timestamp).toBe(80.363225);
    expect(f.format).toBe('esp32');
    expect([f.sourceId, f.environmentId]).toEqual(['example', 'lab']);
    expect(f.rssi).toEqual([-73]);
    expect(f.noise).toBe(-93);
    expect(f.channel).toBe(1);
    expect(f.bandwidthMhz).toBe(40);
    expect(f.deviceTime).toBe(80272146);
    expect(f.clockUs).toBe(80272146);
    expect(f.time).toBe(0);
    expect([f.nRx, f.nTx, f.nSub]).toEqual([1, 1, 64]);
  });

  it('pairs imaginary-first values into (re, im)', () => {
    const f = frames[0]!;
    expect(rawValues(f).slice(0, 12)).toEqual(facts.first_raw_12);
    expect([0, 1, 2].map((i) => [f.csi[2 * i], f.csi[2 * i + 1]])).toEqual(facts.first_3_complex_parse_csi_py);
  });

  it('matches rssi per row, len counts, 128 values per row, the raw sum and the last timestamp', () => {
    expect(frames.map((f) => f.rssi[0])).toEqual(facts.rssi_all);
    const lens: Record<string, number> = {};
    for (const f of frames) lens[String(f.meta!.len)] = (lens[String(f.meta!.len)] ?? 0) + 1;
    expect(lens).toEqual(facts.len_field_values);
    expect(frames.every((f) => f.csi.length === facts.values_per_row[0])).toBe(true);
    let sum = 0;
    for (const f of frames) for (const v of f.csi) sum += v;
    expect(sum).toBe(facts.sum_all_raw_ints);
    expect(frames[12]!.meta!.real_timestamp).toBe(Number(facts.last_real_timestamp));
  });

  it('labels the 64 LLTF entries of a secondary-above HT40 record -64..-1 (ESP-IDF table)', () => {
    expect(frames[0]!.meta).toMatchObject({ secondary_channel: 1, sig_mode: 1, bandwidth: 1, stbc: 0 });
    expect(Array.from(frames[0]!.subcarriers)).toEqual(span(-64, -1));
  });

  it('gives identical frames whatever the chunking', () => {
    const whole = frames.map(digest);
    const fresh = () => new Esp32Decoder({ sourceId: 'example', environmentId: 'lab' });
    expect(
      run(
        fresh(),
        sized(bytes, () => 1),
      ).map(digest),
    ).toEqual(whole);
    expect(
      run(
        fresh(),
        sized(bytes, () => 13),
      ).map(digest),
    ).toEqual(whole);
    const rnd = mulberry32(8);
    for (let t = 0; t < 10; t++)
      expect(
        run(
          fresh(),
          sized(bytes, () => Math.floor(rnd() * 700)),
        ).map(digest),
      ).toEqual(whole);
  });

  it('decodes an unterminated final line at end(), and counts a cut one as skipped', () => {
    const noLf = bytes.subarray(0, bytes.length - 1);
    expect(bytes[bytes.length - 1]).toBe(0x0a);
    const r = decodeEsp32(noLf, { sourceId: 'example', environmentId: 'lab' });
    expect(r.frames.map(digest)).toEqual(frames.map(digest));
    expect(r.error).toBeUndefined();
    const cut = decodeEsp32(bytes.subarray(0, bytes.length - 20));
    expect(cut.frames).toHaveLength(12);
    expect(cut.stats.skipped).toBe(1);
  });

  it('survives seeded corruption: never throws', () => {
    const rnd = mulberry32(77);
    for (let t = 0; t < 50; t++) {
      const b = bytes.slice();
      for (let k = 0; k < 30; k++) b[Math.floor(rnd() * b.length)] = Math.floor(rnd() * 256);
      const d = new Esp32Decoder();
      let n = 0;
      for (const c of sized(b, () => 1 + Math.floor(rnd() * 500))) expect(() => d.push(c, () => n++)).not.toThrow();
      expect(() => d.end(() => n++)).not.toThrow();
      expect(n).toBe(d.stats.records);
      expect(d.stats.records).toBeLessThanOrEqual(13 + 30); // a corrupted LF can at most split lines
    }
  });
});

// ---- esp-csi CSI_DATA files -------------------------------------------------------------------

const HEADER =
  'type,id,mac,rssi,rate,sig_mode,mcs,bandwidth,smoothing,not_sounding,aggregation,stbc,fec_coding,sgi,noise_floor,ampdu_cnt,channel,secondary_channel,local_timestamp,ant,sig_len,rx_state,len,first_word,data';

function values(n: number, seed: number): number[] {
  return Array.from({ length: n }, (_, i) => ((i * 37 + seed * 11) % 256) - 128);
}

interface Row {
  id: number;
  mac: string;
  rssi: number;
  sigMode: number;
  cwb: number;
  stbc: number;
  noise: number;
  channel: number;
  secondary: number;
  ts: number;
  firstWord: number;
  vals: number[];
  len?: number;
  sep?: string;
}

function espCsiLine(r: Row): string {
  const cols = [
    'CSI_DATA',
    r.id,
    r.mac,
    r.rssi,
    11,
    r.sigMode,
    0,
    r.cwb,
    1,
    1,
    0,
    r.stbc,
    0,
    0,
    r.noise,
    0,
    r.channel,
    r.secondary,
    r.ts,
    0,
    60,
    0,
    r.len ?? r.vals.length,
    r.firstWord,
  ];
  return `${cols.join(',')},"[${r.vals.join(r.sep ?? ',')}]"`;
}

const rowA: Row = {
  id: 0,
  mac: 'aa:bb:cc:dd:ee:ff',
  rssi: -45,
  sigMode: 0,
  cwb: 0,
  stbc: 0,
  noise: -97,
  channel: 6,
  secondary: 0,
  ts: 1234567,
  firstWord: 1,
  vals: values(128, 1),
};
const rowB: Row = {
  id: 1,
  mac: '24:0a:c4:00:00:01',
  rssi: -60,
  sigMode: 1,
  cwb: 1,
  stbc: 0,
  noise: -95,
  channel: 11,
  secondary: 2,
  ts: 1240000,
  firstWord: 0,
  vals: values(384, 2),
  sep: ', ',
};
const rowBad: Row = { ...rowA, id: 2, vals: values(126, 3), len: 128 };
const rowC: Row = {
  id: 3,
  mac: 'träger-✓',
  rssi: -50,
  sigMode: 1,
  cwb: 0,
  stbc: 1,
  noise: -90,
  channel: 1,
  secondary: 1,
  ts: 1250000,
  firstWord: 0,
  vals: values(376, 4),
};

const espCsiText = [HEADER, espCsiLine(rowA), espCsiLine(rowB), 'I (1234) wifi: station connecté ✓ 📶', espCsiLine(rowBad), espCsiLine(rowC), ''].join('\r\n');
const espCsiBytes = enc.encode(espCsiText);

describe('esp-csi CSI_DATA lines (CRLF, header, quoted arrays)', () => {
  const dec = new Esp32Decoder();
  const frames = run(dec, [espCsiBytes]);

  it('decodes the good lines, skips the header silently and counts the bad ones', () => {
    expect(frames.map((f) => f.meta!.id)).toEqual([0, 1, 3]);
    expect(dec.stats.records).toBe(3);
    expect(dec.stats.skipped).toBe(2);
    expect(dec.skipReasons).toEqual({ malformed: 1, length: 1, 'too-long': 0 });
    expect(dec.stats.bytes).toBe(espCsiBytes.length);
  });

  it('maps columns, pairs and first_word', () => {
    const [a, b, c] = frames as [CsiFrame, CsiFrame, CsiFrame];
    expect(a.meta).toEqual({
      type: 'CSI_DATA',
      id: 0,
      mac: 'aa:bb:cc:dd:ee:ff',
      rssi: -45,
      rate: 11,
      sig_mode: 0,
      mcs: 0,
      bandwidth: 0,
      smoothing: 1,
      not_sounding: 1,
      aggregation: 0,
      stbc: 0,
      fec_coding: 0,
      sgi: 0,
      noise_floor: -97,
      ampdu_cnt: 0,
      channel: 6,
      secondary_channel: 0,
      local_timestamp: 1234567,
      ant: 0,
      sig_len: 60,
      rx_state: 0,
      len: 128,
      first_word: 1,
      first_word_invalid: true,
      layout: 'esp-csi',
    });
    expect(rawValues(a)).toEqual(rowA.vals);
    expect([a.csi[0], a.csi[1]]).toEqual([rowA.vals[1], rowA.vals[0]]);
    expect([a.nSub, a.bandwidthMhz, a.noise, a.channel, a.deviceTime, a.clockUs, a.seq]).toEqual([64, 20, -97, 6, 1234567, 1234567, 0]);
    expect(Array.from(a.subcarriers)).toEqual([...span(0, 31), ...span(-32, -1)]);

    expect(b.meta!.first_word_invalid).toBe(false);
    expect(rawValues(b)).toEqual(rowB.vals);
    expect([b.nSub, b.bandwidthMhz, b.seq]).toEqual([192, 40, 1]);
    expect(Array.from(b.subcarriers)).toEqual([...span(0, 63), ...span(0, 63), ...span(-64, -1)]);

    expect(c.meta!.mac).toBe('träger-✓');
    expect(c.nSub).toBe(188);
    expect(Array.from(c.subcarriers)).toEqual([...span(-64, -1), ...span(-62, -1), ...span(-62, -1)]);
  });

  it('gives the same result when a line is split at every byte position', () => {
    const line = enc.encode(espCsiLine(rowC) + '\r\n');
    const ref = digest(frames[2]!).replace('"index":2', '"index":0').replace('"seq":2', '"seq":0');
    for (let k = 0; k <= line.length; k++) {
      const d = new Esp32Decoder();
      const got = run(d, [line.subarray(0, k), line.subarray(k)]);
      expect(got.map(digest)).toEqual([ref]);
      expect(d.stats.skipped).toBe(0);
    }
  });

  it('gives the same result when the whole file is split at every byte position', () => {
    const whole = frames.map(digest);
    for (let k = 0; k <= espCsiBytes.length; k++) {
      const d = new Esp32Decoder();
      expect(run(d, [espCsiBytes.subarray(0, k), espCsiBytes.subarray(k)]).map(digest)).toEqual(whole);
      expect(d.stats.skipped).toBe(2);
    }
  });

  it('reads LF-only files and unquoted arrays the same way', () => {
    const lf = decodeEsp32(enc.encode(espCsiText.replaceAll('\r\n', '\n')));
    expect(lf.frames.map(digest)).toEqual(frames.map(digest));
    const unquoted = espCsiLine(rowA).replace('"[', '[').replace(/]"$/, ']');
    const r = decodeEsp32(enc.encode(unquoted + '\n'));
    expect(r.frames.map((f) => rawValues(f))).toEqual([rowA.vals]);
  });

  it('skips and counts every kind of malformed line without throwing', () => {
    const good = espCsiLine(rowA);
    const tool = (vals: string) => `CSI_DATA,AP,3C:71:BF:6D:2A:78,-73,11,1,0,1,1,1,0,0,0,0,-93,0,1,1,80272146,0,101,0,0,80.363225,384,[${vals}]`;
    const bad: Array<[string, string]> = [
      [good.replace('CSI_DATA,0,', 'CSI_DATA,'), 'malformed'], // 23 fields
      [good.replace(',-45,', ',-4x,'), 'malformed'], // unparseable number
      [good.replace(',1234567,', ',,'), 'malformed'], // empty numeric field
      [tool('1 2 3 '), 'malformed'], // odd count
      [tool(''), 'malformed'], // no values
      [tool('1 2 128 4 '), 'malformed'], // above int8
      [tool('1 2 -129 4 '), 'malformed'], // below int8
      [tool('1 2--3 4 '), 'malformed'], // no separator
      [tool('1 2 x 4 '), 'malformed'],
      [tool('1 2 3 4 ') + 'junk', 'malformed'], // text after ]
      [good.slice(0, -2), 'malformed'], // no closing ]"
      [good.slice(0, -1), 'malformed'], // no closing quote
      [good.replace('"[', '"[999999999999999999999,'), 'malformed'],
      [espCsiLine({ ...rowA, len: 130 }), 'length'],
      [espCsiLine({ ...rowA, vals: values(127, 1) }), 'malformed'],
      ['just some console noise', 'malformed'],
    ];
    for (const [line, reason] of bad) {
      const d = new Esp32Decoder();
      const frames = run(d, [enc.encode(`${line}\r\n${good}\r\n`)]);
      expect(frames, line).toHaveLength(1);
      expect(d.stats.skipped, line).toBe(1);
      expect(d.skipReasons[reason as 'malformed' | 'length'], line).toBe(1);
    }
    // The boundary values are accepted.
    expect(decodeEsp32(enc.encode(tool('-128 127 0 -0 ') + '\n')).frames.map((f) => Array.from(f.csi))).toEqual([[127, -128, 0, 0]]);
    // Blank lines and the header are not records and not skips.
    const quiet = decodeEsp32(enc.encode(`\r\n${HEADER}\r\n   \r\n\n`));
    expect(quiet.stats).toEqual({ records: 0, skipped: 0, bytes: HEADER.length + 10 });
  });

  it('discards lines longer than 64 KiB, counted, with bounded memory, however chunked', () => {
    const good = espCsiLine(rowA);
    const atLimit = 'x'.repeat(ESP32_MAX_LINE);
    const overLimit = 'x'.repeat(ESP32_MAX_LINE + 1);
    const text = enc.encode(`${overLimit}\n${good}\n${atLimit}\n${good}\n${'y'.repeat(200_000)}`);
    for (const size of [text.length, 1000, 65_536, 4097]) {
      const d = new Esp32Decoder();
      const frames = run(
        d,
        sized(text, () => size),
      );
      expect(frames).toHaveLength(2);
      expect(d.skipReasons).toEqual({ malformed: 1, length: 0, 'too-long': 2 });
    }
  });

  it('datagram mode decodes each pushed line at once, newline or not', () => {
    const d = new Esp32Decoder({ datagrams: true });
    const got: CsiFrame[] = [];
    d.push(enc.encode(espCsiLine(rowA)), (f) => got.push(f));
    expect(got).toHaveLength(1);
    d.push(enc.encode(espCsiLine(rowB) + '\r\n'), (f) => got.push(f));
    d.push(enc.encode(`${espCsiLine(rowC)}\n${espCsiLine(rowA)}`), (f) => got.push(f));
    expect(got.map((f) => f.meta!.id)).toEqual([0, 1, 3, 0]);
    // A stream decoder would have glued the first two together.
    const s = run(new Esp32Decoder(), [enc.encode(espCsiLine(rowA)), enc.encode(espCsiLine(rowB))]);
    expect(s).toHaveLength(0);
  });

  it('seeded garbage: push and end never throw', () => {
    const rnd = mulberry32(31337);
    for (let t = 0; t < 100; t++) {
      const len = Math.floor(rnd() * 5000);
      const junk = Uint8Array.from({ length: len }, () => {
        const r = rnd();
        // Bias towards the characters the parser cares about.
        return r < 0.1 ? 0x0a : r < 0.2 ? 0x2c : r < 0.25 ? 0x5b : r < 0.3 ? 0x5d : r < 0.35 ? 0x22 : Math.floor(rnd() * 256);
      });
      const d = new Esp32Decoder({ datagrams: t % 2 === 1 });
      for (const c of sized(junk, () => 1 + Math.floor(rnd() * 300))) expect(() => d.push(c, () => {})).not.toThrow();
      expect(() => d.end(() => {})).not.toThrow();
    }
  });
});

describe('esp32Subcarriers (ESP-IDF CSI table)', () => {
  it('covers every column of the table with its documented byte total', () => {
    const none = [...span(0, 31), ...span(-32, -1)];
    const cases: Array<[number, number, number, number, number[]]> = [
      [0, 0, 0, 0, none], // 128 bytes
      [0, 1, 0, 0, [...none, ...none]], // 256
      [0, 1, 0, 1, [...none, ...none, ...none]], // 384
      [2, 0, 0, 0, span(0, 63)], // 128
      [2, 1, 0, 0, [...span(0, 63), ...span(0, 63)]], // 256
      [2, 1, 0, 1, [...span(0, 63), ...span(0, 62), ...span(0, 62)]], // 380
      [2, 1, 1, 0, [...span(0, 63), ...span(0, 63), ...span(-64, -1)]], // 384
      [2, 1, 1, 1, [...span(0, 63), ...span(0, 60), ...span(-60, -1), ...span(0, 60), ...span(-60, -1)]], // 612
      [1, 0, 0, 0, span(-64, -1)], // 128
      [1, 1, 0, 0, [...span(-64, -1), ...span(-64, -1)]], // 256
      [1, 1, 0, 1, [...span(-64, -1), ...span(-62, -1), ...span(-62, -1)]], // 376
      [1, 1, 1, 0, [...span(-64, -1), ...span(0, 63), ...span(-64, -1)]], // 384
      [1, 1, 1, 1, [...span(-64, -1), ...span(0, 60), ...span(-60, -1), ...span(0, 60), ...span(-60, -1)]], // 612
    ];
    const bytes = [128, 256, 384, 128, 256, 380, 384, 612, 128, 256, 376, 384, 612];
    cases.forEach(([sec, sig, cwb, stbc, want], i) => {
      expect(want.length * 2).toBe(bytes[i]);
      expect(Array.from(esp32Subcarriers(sec, sig, cwb, stbc, want.length))).toEqual(want);
      // A shorter buffer is a prefix (ESP32-CSI-Tool prints 64 entries).
      expect(Array.from(esp32Subcarriers(sec, sig, cwb, stbc, 64))).toEqual(want.slice(0, 64));
    });
  });

  it('extends past the table with the LLTF ranges and shares tables', () => {
    const t = esp32Subcarriers(0, 0, 0, 0, 130);
    expect(Array.from(t.subarray(64, 130))).toEqual([...span(0, 31), ...span(-32, -1), 0, 1]);
    expect(esp32Subcarriers(0, 0, 0, 0, 130)).toBe(t);
  });
});
