import { createSocket, type Socket } from 'node:dgram';
import { Observable, type Subscription } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import type { CsiFrame } from '../../src/csi/frame.js';
import type { RadioConfig } from '../../src/csi/radios.js';
import { encodeIntel5300 } from '../../src/encoders/intel5300.js';
import { CsiSimulator } from '../../src/sim/simulator.js';
import { udpSource, type UdpStats } from '../../src/sources/udp.js';
import { parseSource, SourceError, type SourceContext } from '../../src/sources/uri.js';

/** Safety net so a lost datagram fails the test instead of hanging it; not a measurement. */
const GIVE_UP_MS = 10_000;

/** A site whose transmitter is not called `tx`, so that link ids show where they came from. */
const SITE: RadioConfig[] = [
  { id: 'ap', role: 'tx', x: 3, y: 4.8, z: 1.2, yaw_deg: 270, antennas: 3, spacing_m: 0.029, format: 'intel5300' },
  { id: 'rx1', role: 'rx', x: 3, y: 0.2, z: 1.2, yaw_deg: 90, antennas: 3, spacing_m: 0.029, format: 'intel5300' },
  { id: 'rx2', role: 'rx', x: 0.2, y: 2.5, z: 1.2, yaw_deg: 0, antennas: 3, spacing_m: 0.029, format: 'intel5300' },
  { id: 'rx3', role: 'rx', x: 5.8, y: 2.5, z: 1.2, yaw_deg: 180, antennas: 3, spacing_m: 0.029, format: 'intel5300' },
];

/**
 * Intel 5300 records (one per datagram) of simulated frames, `bfee_count` = `seqBase + i` so that
 * each received frame tells which datagram it was.
 */
function records(n: number, seqBase: number): Uint8Array[] {
  const sim = new CsiSimulator({ seed: 5, people: 1 });
  return Array.from({ length: n }, (_, i) => encodeIntel5300({ ...sim.next().frame, seq: seqBase + i }));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(cond: () => boolean, what: () => string): Promise<void> {
  const deadline = Date.now() + GIVE_UP_MS;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`gave up waiting: ${what()}`);
    await sleep(2);
  }
}

const sockets: Socket[] = [];
const subs: Subscription[] = [];
afterEach(() => {
  subs.splice(0).forEach((s) => s.unsubscribe());
  sockets.splice(0).forEach((s) => s.close());
});

/** A UDP socket bound to `address` (any of 127.0.0.0/8 works on loopback), port 0. */
async function senderOn(address: string): Promise<Socket> {
  const s = createSocket('udp4');
  sockets.push(s);
  await new Promise<void>((resolve, reject) => {
    s.once('error', reject);
    s.bind(0, address, () => resolve());
  });
  return s;
}

function send(s: Socket, port: number, payload: Uint8Array): Promise<void> {
  return new Promise((resolve, reject) => s.send(payload, port, '127.0.0.1', (e) => (e ? reject(e) : resolve())));
}

/** Sends payloads one at a time, each after the listener counted the one before (loopback buffers are finite). */
async function sendCounted(s: Socket, port: number, payloads: readonly Uint8Array[], stats: UdpStats): Promise<void> {
  for (const p of payloads) {
    const before = stats.datagrams;
    await send(s, port, p);
    await until(
      () => stats.datagrams > before,
      () => `datagram ${before + 1} not received`,
    );
  }
}

/** Subscribes a udpSource on 127.0.0.1, port 0, and waits until it listens. */
async function listen(opts: Omit<Parameters<typeof udpSource>[0], 'host' | 'port' | 'onListening' | 'stats'>) {
  const frames: CsiFrame[] = [];
  const errors: unknown[] = [];
  const stats: UdpStats = { datagrams: 0, records: 0, skipped: 0, bytes: 0 };
  let port = -1;
  subs.push(
    udpSource({ ...opts, host: '127.0.0.1', port: 0, stats, onListening: (a) => (port = a.port) }).subscribe({
      next: (f) => frames.push(f),
      error: (e) => errors.push(e),
    }),
  );
  await until(
    () => port > 0 || errors.length > 0,
    () => 'the source did not listen',
  );
  return { frames, errors, stats, port };
}

/** Opens a parsed source for frames, collecting them. */
function collect(uri: string, ctx: SourceContext): { frames: CsiFrame[]; errors: unknown[] } {
  const frames: CsiFrame[] = [];
  const errors: unknown[] = [];
  subs.push((parseSource(uri).open('frame', ctx) as Observable<CsiFrame>).subscribe({ next: (f) => frames.push(f), error: (e) => errors.push(e) }));
  return { frames, errors };
}

/** Ports that were free a moment ago (bound to port 0 on 127.0.0.1, then released). */
async function freePorts(n: number): Promise<number[]> {
  const probes = await Promise.all(Array.from({ length: n }, () => senderOn('127.0.0.1')));
  const ports = probes.map((p) => p.address().port);
  for (const p of probes) {
    sockets.splice(sockets.indexOf(p), 1);
    await new Promise<void>((r) => p.close(() => r()));
  }
  return ports;
}

describe('udpSource: links', () => {
  it('link: every frame of the port carries the link; sourceId names the port', async () => {
    const l = await listen({ format: 'intel5300', linkId: 'tx-rx2' });
    const s = await senderOn('127.0.0.1');
    await sendCounted(s, l.port, records(4, 100), l.stats);
    await until(
      () => l.frames.length >= 4,
      () => `${l.frames.length} of 4 frames`,
    );
    expect(l.errors).toEqual([]);
    expect(l.frames.map((f) => f.seq)).toEqual([100, 101, 102, 103]);
    for (const f of l.frames) expect(f).toMatchObject({ linkId: 'tx-rx2', sourceId: `udp://127.0.0.1:${l.port}`, format: 'intel5300' });
  });

  it('without a link the frames carry none (the primary link)', async () => {
    const l = await listen({ format: 'intel5300' });
    const s = await senderOn('127.0.0.1');
    await sendCounted(s, l.port, records(2, 7), l.stats);
    await until(
      () => l.frames.length >= 2,
      () => `${l.frames.length} of 2 frames`,
    );
    expect(l.frames.every((f) => f.linkId === undefined && !('linkId' in f))).toBe(true);
  });

  it('senders: one port, each source address its own link, decoder and sourceId; unlisted senders dropped and counted', async () => {
    const l = await listen({
      format: 'intel5300',
      senders: [
        { address: '127.0.0.2', name: 'rx1', linkId: 'tx-rx1' },
        { address: '127.0.0.3', name: 'rx2', linkId: 'tx-rx2' },
      ],
    });
    const [a, b, stranger] = await Promise.all([senderOn('127.0.0.2'), senderOn('127.0.0.3'), senderOn('127.0.0.4')]);
    const ra = records(3, 100);
    const rb = records(2, 200);
    // Interleaved, with a stranger's valid records in between.
    await sendCounted(a, l.port, [ra[0]!], l.stats);
    await sendCounted(b, l.port, [rb[0]!], l.stats);
    await sendCounted(stranger, l.port, records(2, 900), l.stats);
    await sendCounted(a, l.port, [ra[1]!], l.stats);
    await sendCounted(b, l.port, [rb[1]!], l.stats);
    await sendCounted(a, l.port, [ra[2]!], l.stats);
    await until(
      () => l.frames.length >= 5,
      () => `${l.frames.length} of 5 frames`,
    );
    expect(l.errors).toEqual([]);
    expect(l.frames.map((f) => [f.seq, f.linkId, f.index])).toEqual([
      [100, 'tx-rx1', 0],
      [200, 'tx-rx2', 0],
      [101, 'tx-rx1', 1],
      [201, 'tx-rx2', 1],
      [102, 'tx-rx1', 2],
    ]);
    const base = `udp://127.0.0.1:${l.port}`;
    expect(l.frames.filter((f) => f.linkId === 'tx-rx1').every((f) => f.sourceId === `${base}#rx1`)).toBe(true);
    expect(l.frames.filter((f) => f.linkId === 'tx-rx2').every((f) => f.sourceId === `${base}#rx2`)).toBe(true);
    expect(l.stats).toMatchObject({ datagrams: 7, unlisted: 2, records: 5, skipped: 0 });
  });
});

describe('parseSource: udp links', () => {
  it('link=RX and senders= take the transmitter id from the site the source is opened with', async () => {
    const [p1, p2] = await freePorts(2);
    const one = collect(`udp://127.0.0.1:${p1}?format=intel5300&link=rx3`, { radios: () => SITE });
    const shared = collect(`udp://127.0.0.1:${p2}?format=intel5300&senders=rx1@127.0.0.2,rx2@127.0.0.3`, { radios: () => SITE });
    const [a, b] = await Promise.all([senderOn('127.0.0.2'), senderOn('127.0.0.3')]);
    // The sources bind asynchronously: send until something arrives (a datagram before the bind is lost).
    const rec = records(1, 300)[0]!;
    await until(
      () => {
        void send(a, p1!, rec);
        void send(a, p2!, rec);
        void send(b, p2!, rec);
        return one.frames.length > 0 && shared.frames.some((f) => f.linkId === 'ap-rx1') && shared.frames.some((f) => f.linkId === 'ap-rx2');
      },
      () => `frames: ${one.frames.length} on ${p1}, ${shared.frames.length} on ${p2}`,
    );
    expect(one.errors).toEqual([]);
    expect(shared.errors).toEqual([]);
    expect(new Set(one.frames.map((f) => f.linkId))).toEqual(new Set(['ap-rx3']));
    expect(new Set(one.frames.map((f) => f.sourceId))).toEqual(new Set([`udp://127.0.0.1:${p1}`]));
    expect(new Set(shared.frames.map((f) => `${f.linkId} ${f.sourceId}`))).toEqual(
      new Set([`ap-rx1 udp://127.0.0.1:${p2}#rx1`, `ap-rx2 udp://127.0.0.1:${p2}#rx2`]),
    );
  });

  it('without a site the transmitter is "tx"; a full link id is taken as it is', async () => {
    const [p1, p2] = await freePorts(2);
    const plain = collect(`udp://127.0.0.1:${p1}?format=intel5300&link=rx2`, {});
    const full = collect(`udp://127.0.0.1:${p2}?format=intel5300&link=ap-rx1`, { radios: () => SITE });
    const s = await senderOn('127.0.0.1');
    const rec = records(1, 1)[0]!;
    await until(
      () => {
        void send(s, p1!, rec);
        void send(s, p2!, rec);
        return plain.frames.length > 0 && full.frames.length > 0;
      },
      () => 'no frames',
    );
    expect(plain.frames[0]!.linkId).toBe('tx-rx2');
    expect(full.frames[0]!.linkId).toBe('ap-rx1');
  });

  it('a receiver the site does not have errors the stream with a SourceError naming the receivers', async () => {
    for (const uri of ['udp://127.0.0.1:0?format=intel5300&link=rx9', 'udp://127.0.0.1:0?format=intel5300&senders=rx1@127.0.0.2,rx7@127.0.0.3']) {
      const { frames, errors } = collect(uri, { radios: () => SITE });
      expect(frames).toEqual([]);
      expect(errors).toHaveLength(1);
      expect(errors[0]).toBeInstanceOf(SourceError);
      expect((errors[0] as Error).message).toMatch(/link "rx[79]" of udp:\/\/.* is not a receiver of this site \(receivers: rx1, rx2, rx3\)/);
    }
  });

  it('two udp sources listed in one --source merge as they come, each frame on its own link and port', async () => {
    const [p1, p2] = await freePorts(2);
    const list = collect(`udp://127.0.0.1:${p1}?format=intel5300&link=rx1  udp://127.0.0.1:${p2}?format=intel5300&link=rx2`, {
      radios: () => SITE,
    });
    const s = await senderOn('127.0.0.1');
    const r1 = records(1, 10)[0]!;
    const r2 = records(1, 20)[0]!;
    await until(
      () => {
        void send(s, p1!, r1);
        void send(s, p2!, r2);
        return list.frames.some((f) => f.seq === 10) && list.frames.some((f) => f.seq === 20);
      },
      () => `${list.frames.length} frames`,
    );
    expect(list.errors).toEqual([]);
    expect(new Set(list.frames.map((f) => `${f.seq} ${f.linkId} ${f.sourceId}`))).toEqual(
      new Set([`10 ap-rx1 udp://127.0.0.1:${p1}`, `20 ap-rx2 udp://127.0.0.1:${p2}`]),
    );
  });
});
