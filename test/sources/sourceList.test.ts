import { describe, expect, it } from 'vitest';
import { parseSource } from '../../src/sources/uri.js';
import { parseMqttUri } from '../../src/sources/mqtt.js';
import { LinkResolver, normaliseAddress } from '../../src/sources/links.js';
import { DEFAULT_RADIOS } from '../../src/csi/radios.js';
import { parseError } from '../helpers/sources.js';

describe('parseSource: links and lists of sources, accepted forms', () => {
  it('link= and senders= on udp, link= on files, link=RX|topic on mqtt', () => {
    expect(parseSource('udp://0.0.0.0:5501?format=intel5300&link=rx1').emits).toEqual(['frame']);
    expect(parseSource('udp://0.0.0.0:5500?format=esp32&senders=rx1@10.0.0.21,rx2@10.0.0.22').emits).toEqual(['frame']);
    expect(parseSource('udp://[::]:5500?format=nexmon&senders=rx1@[fe80::1],rx2@10.0.0.22').emits).toEqual(['frame']);
    expect(parseSource('file:/data/log.all_csi.6.7.6?link=rx2').emits).toEqual(['bytes', 'frame']);
    expect(parseMqttUri('mqtt://broker/csi/room/+?format=esp32&link=topic').link).toEqual({ kind: 'topic' });
    expect(parseMqttUri('mqtt://broker/csi/room/a?format=esp32&link=rx3').link).toEqual({ kind: 'fixed', name: 'rx3' });
    expect(parseMqttUri('mqtt://broker/csi/room/a?format=esp32').link).toBeUndefined();
  });

  it('a list is one frame source whose uri is the list as written', () => {
    const list = 'udp://0.0.0.0:5501?format=intel5300&link=rx1 udp://0.0.0.0:5502?format=intel5300&link=rx2';
    const def = parseSource(list);
    expect(def.uri).toBe(list);
    expect(def.emits).toEqual(['frame']);
    // Any white space separates, also newlines (a list in a config file).
    expect(parseSource('file:/a.dat?format=intel5300&link=rx1\n  file:/b.dat?format=intel5300&link=rx2\n').emits).toEqual(['frame']);
    expect(parseSource('mqtt://broker/csi/a/+?format=esp32&link=topic udp://0.0.0.0:5500?format=esp32&senders=rx3@10.0.0.23').emits).toEqual(['frame']);
  });

  it('a single file path may still hold spaces', () => {
    expect(parseSource('file:/my captures/log.all_csi.6.7.6').emits).toEqual(['bytes', 'frame']);
    // White space around a single URI (a config value ending in a newline) is not part of it.
    expect(parseSource('  udp://0.0.0.0:5500?format=esp32\n').uri).toBe('udp://0.0.0.0:5500?format=esp32');
  });

  it('normalises IPv4-mapped IPv6 sender addresses to IPv4', () => {
    expect(normaliseAddress('::ffff:10.0.0.21')).toBe('10.0.0.21');
    expect(normaliseAddress('FE80::1')).toBe('fe80::1');
  });

  it('resolves receiver names against the site, or against transmitter "tx" without one', () => {
    const site = new LinkResolver(DEFAULT_RADIOS);
    expect(site.find('rx2')).toBe('tx-rx2');
    expect(site.find('tx-rx3')).toBe('tx-rx3');
    expect(site.find('rx4')).toBeUndefined();
    expect(site.find('tx')).toBeUndefined();
    const none = new LinkResolver(undefined);
    expect(none.find('rx9')).toBe('tx-rx9');
    expect(none.find('tx-rx9')).toBe('tx-rx9');
  });
});

describe('parseSource: malformed links and lists raise SourceError with a useful message', () => {
  const cases: Array<[string, RegExp]> = [
    ['udp://0.0.0.0:5500?format=esp32&link=RX1', /link "RX1" in udp:\/\/0\.0\.0\.0:5500\?format=esp32&link=RX1 must be a receiver id/],
    ['udp://0.0.0.0:5500?format=esp32&link=', /link "" in .* must be a receiver id/],
    ['udp://0.0.0.0:5500?format=esp32&link=topic', /link=topic is for mqtt sources only/],
    ['udp://0.0.0.0:5500?format=esp32&link=rx1&senders=rx2@10.0.0.2', /give link= or senders=, not both/],
    ['udp://0.0.0.0:5500?format=esp32&senders=10.0.0.2', /"10\.0\.0\.2" is not RX@ADDRESS: senders=RX@ADDRESS,RX@ADDRESS/],
    ['udp://0.0.0.0:5500?format=esp32&senders=rx1@10.0.0.300', /"10\.0\.0\.300" of sender rx1 is not an IP address/],
    ['udp://0.0.0.0:5500?format=esp32&senders=rx1@host.lan', /"host\.lan" of sender rx1 is not an IP address/],
    ['udp://0.0.0.0:5500?format=esp32&senders=rx1@10.0.0.2,rx2@10.0.0.2', /sender address 10\.0\.0\.2 is listed twice/],
    ['udp://0.0.0.0:5500?format=esp32&senders=rx1@10.0.0.2,rx1@10.0.0.3', /receiver rx1 is listed twice in senders=/],
    ['udp://0.0.0.0:5500?format=esp32&senders=', /"" is not RX@ADDRESS/],
    ['file:/a.dat?format=intel5300&senders=rx1@10.0.0.2', /senders= is for udp sources only/],
    ['file:/a.dat?format=intel5300&link=topic', /link=topic is for mqtt sources only/],
    ['mqtt://u:hunter2@broker/csi/x?format=esp32&link=Bad', /link "Bad" in mqtt topic "csi\/x" must be a receiver id/],
    // Lists
    [
      'udp://0.0.0.0:5501?format=intel5300&link=rx1 udp://0.0.0.0:5502?format=intel5300',
      /each of several sources names its link: add &link=RX \(a receiver id\) to udp:\/\/0\.0\.0\.0:5502\?format=intel5300$/,
    ],
    [
      'udp://0.0.0.0:5501?format=intel5300&link=rx1 udp://0.0.0.0:5502?format=intel5300&link=rx1',
      /link "rx1" is given by two sources: udp:\/\/0\.0\.0\.0:5501\S* and udp:\/\/0\.0\.0\.0:5502/,
    ],
    ['udp://0.0.0.0:5501?format=esp32&senders=rx1@10.0.0.2 udp://0.0.0.0:5502?format=esp32&link=rx1', /link "rx1" is given by two sources/],
    ['udp://0.0.0.0:5501?format=intel5300&link=rx1 udp://127.0.0.1:5501?format=intel5300&link=rx2', /udp port 5501 is listed twice/],
    ['file:/a.dat?format=intel5300&link=rx1 file:/a.dat?format=intel5300&link=rx2', /file:\/a\.dat is listed twice/],
    [
      'file:/a.dat?format=intel5300&link=rx1 udp://0.0.0.0:5502?format=intel5300&link=rx2',
      /file replays and live sources \(udp, mqtt\) cannot be listed together/,
    ],
    ['sim udp://0.0.0.0:5502?format=intel5300&link=rx2', /sim cannot be listed with other sources: the simulator brings its site's links itself/],
    ['udp://0.0.0.0:5502?format=intel5300&link=rx2 stdin?format=esp32', /stdin cannot be listed with other sources/],
    ['file:/a.bin?link=rx1 file:/b.bin?link=rx2', /cannot tell the format of \/a\.bin: add \?format=/],
    [
      'file:/a.dat?format=intel5300&link=rx1&speed=1 file:/b.dat?format=intel5300&link=rx2&speed=2',
      /listed files replay at one speed: got speed=1 and speed=2/,
    ],
    [
      'udp://0.0.0.0:5501?format=intel5300&link=rx1 http://x',
      /"http:\/\/x" is not a source \(a list holds file:PATH, udp:\/\/HOST:PORT or mqtt:\/\/HOST\/TOPIC URIs/,
    ],
    ['sim?seed=1 people=2', /"people=2" is not a source/],
    ['udp://0.0.0.0:5501?format=intel5300&link=rx1 udp://0.0.0.0:5502?format=wifi&link=rx2', /unknown format "wifi"/],
  ];
  for (const [uri, message] of cases) {
    it(`"${uri}"`, () => {
      expect(parseError(uri).message).toMatch(message);
    });
  }

  it('a list never shows an mqtt password', () => {
    const e = parseError('mqtt://csi:hunter2@broker/csi/a?format=esp32 udp://0.0.0.0:5502?format=esp32&link=rx2');
    expect(e.message).toMatch(/add &link=RX \(a receiver id\) to mqtt:\/\/broker\/csi\/a\?format=esp32/);
    expect(e.message).not.toContain('hunter2');
    const dup = parseError('mqtt://csi:hunter2@broker/csi/a?format=esp32&link=rx1 mqtt://csi:hunter2@broker/csi/b?format=esp32&link=rx1');
    expect(dup.message).toMatch(/link "rx1" is given by two sources/);
    expect(dup.message).not.toContain('hunter2');
  });
});
