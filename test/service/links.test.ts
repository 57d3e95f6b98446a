import { createSocket, type Socket } from 'node:dgram';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeIntel5300 } from '../../src/encoders/intel5300.js';
import { CsiSimulator } from '../../src/sim/simulator.js';
import { renderStatusMessage } from '../../src/service/status.js';
import { DEFAULT_TOLERANCE_MS } from '../../src/csi/linkJoin.js';
import { startServer, until, waitForStatus, type TestServer } from '../helpers/server.js';
import { freeUdpPort } from '../helpers/sources.js';

/** A link of the status answer (Form B `components.csi_processor.links`, Form A `csi_receiver.links`). */
interface WireLink {
  link_id: string;
  tx: string;
  rx: string;
  state: string;
  primary: boolean;
  layout: string;
  frames: number;
  reason: string;
  [field: string]: unknown;
}

/** The status answer's components, the parts read here (the processor in Form B, the receiver in Form A). */
interface LinkStatus {
  components: { csi_processor?: { status: string; links: WireLink[] }; csi_receiver?: { status: string; links: WireLink[] } };
}

/** The parts of the `system_status` message (`renderStatusMessage`) read here. */
type StatusMessage = { status: { system_health: string } };

/**
 * Issue 18 item 1 in the service: the default site's three links (1 TX + 3 RX) arrive on three
 * real UDP ports as Intel 5300 records, one port per receiver (`link=rxN`). The live pipeline joins
 * them by time and reads the primary link; `/system/status` shows every link in both forms, and a
 * link that is mismatched or stopped makes the service degraded, naming it. When the primary stops,
 * poses stop.
 */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One receiver: its port, its simulator (3x3x30 unless told), its next sequence number. */
interface Rx {
  port: number;
  sim: CsiSimulator;
  seq: number;
}

describe('links in the service', () => {
  let s: TestServer;
  let token: string;
  let sender: Socket;
  const rx: Rx[] = [];

  beforeAll(async () => {
    for (let i = 0; i < 3; i++) rx.push({ port: await freeUdpPort(), sim: new CsiSimulator({ seed: 11 + i, people: 1 }), seq: 0 });
    const source = rx.map((r, i) => `udp://127.0.0.1:${r.port}?format=intel5300&link=rx${i + 1}`).join(' ');
    s = await startServer({ model: true, autostart: true, rateLimitScale: 50, source });
    token = await s.login();
    await waitForStatus(s, token, 'running');
    sender = createSocket('udp4');
    await new Promise<void>((r) => sender.bind(0, '127.0.0.1', r));
  });
  afterAll(async () => {
    sender?.close();
    await s?.close();
  });

  /** One packet of receiver `i` (its layout overridden by `shape`). */
  function send(i: number, shape: { nTx?: number } = {}): Promise<void> {
    const r = rx[i]!;
    const f = r.sim.next().frame;
    const frame = shape.nTx === undefined ? f : { ...f, nTx: shape.nTx, csi: f.csi.filter((_, j) => Math.floor(j / 2) % f.nTx < shape.nTx!) };
    const record = encodeIntel5300({ ...frame, seq: r.seq++ });
    return new Promise((resolve, reject) => sender.send(record, r.port, '127.0.0.1', (e) => (e ? reject(e) : resolve())));
  }

  /** `ticks` packets of each of `links`, a tick every 10 ms at most (about 65 a second here: a pause per tick paces it, nothing is timed), until `stop()` says so. */
  async function pump(links: number[], ticks: number, stop: () => boolean = () => false, shape: (i: number) => { nTx?: number } = () => ({})): Promise<number> {
    let k = 0;
    for (; k < ticks && !stop(); k++) {
      for (const i of links) await send(i, shape(i));
      await sleep(10);
    }
    return k;
  }

  const status = async (form: 'a' | 'b' = 'b') => {
    const r = await s.api('GET', '/system/status', { token, form });
    expect(r.status, r.text).toBe(200);
    return form === 'b' ? r.body.data : r.body;
  };
  const linkOf = (b: LinkStatus, id: string): WireLink => (b.components.csi_processor ?? b.components.csi_receiver)!.links.find((l) => l.link_id === id)!;

  it('three links: waiting, then live and joined, the model reading the primary; mismatched and a stopped primary degrade, named', async () => {
    // Before any packet: every link of the site is listed, waiting; that is not a fault.
    let b = await status();
    expect(b.components.csi_processor.links).toEqual(
      ['rx1', 'rx2', 'rx3'].map((r, i) => ({
        link_id: `tx-${r}`,
        tx: 'tx',
        rx: r,
        state: 'waiting',
        primary: i === 0,
        rate_hz: 0,
        packet_loss_rate: 0,
        last_packet_time: null,
        lag_ms: 0,
        layout: null,
        frames: 0,
        reason: `tx-${r} waiting: no packet yet`,
      })),
    );
    expect(renderStatusMessage(s.svc.snapshot()).status).toMatchObject({ system_health: 'healthy' });

    // 200 packets per link, the three of a tick together.
    await pump([0, 1, 2], 200);
    b = await until(async () => {
      const d = await status();
      return d.components.csi_processor.links.every((l: WireLink) => l.frames === 200) ? d : undefined;
    }, 'all 200 packets of every link');
    expect(b.performance.frames_processed).toBe(600);
    for (const [i, l] of b.components.csi_processor.links.entries()) {
      expect(l).toMatchObject({ link_id: `tx-rx${i + 1}`, state: 'live', primary: i === 0, packet_loss_rate: 0, layout: '3x3x30', frames: 200, reason: '' });
      expect(l.rate_hz).toBeGreaterThan(0);
      expect(Number.isNaN(Date.parse(l.last_packet_time))).toBe(false);
      // Each tick's three packets leave together: the links are within the tolerance of the primary.
      expect(Math.abs(l.lag_ms)).toBeLessThanOrEqual(DEFAULT_TOLERANCE_MS);
    }
    expect(b.components.csi_processor.status).toBe('active');
    const a = await status('a');
    expect(a.components.csi_receiver.links.map((l: WireLink) => [l.link_id, l.state, l.primary, l.layout, l.frames])).toEqual([
      ['tx-rx1', 'live', true, '3x3x30', 200],
      ['tx-rx2', 'live', false, '3x3x30', 200],
      ['tx-rx3', 'live', false, '3x3x30', 200],
    ]);
    expect(a.network.connected_routers).toBe(3);
    // The model reads the primary link alone: 200 frames make windows at 128, 136, ..., 200. Had it
    // read the 600 interleaved frames as one stream, no window would have filled.
    b = await until(async () => {
      const d = await status();
      return d.performance.pose_frames >= 10 ? d : undefined;
    }, '10 pose frames');
    expect(b.performance.pose_frames).toBe(10);

    // rx3 now sends 3x1 antennas: mismatched, not joined; the service is degraded, naming it.
    await pump([0, 1, 2], 16, undefined, (i) => (i === 2 ? { nTx: 1 } : {}));
    b = await until(async () => {
      const d = await status();
      return linkOf(d, 'tx-rx3').state === 'mismatched' && linkOf(d, 'tx-rx1').frames === 216 ? d : undefined;
    }, 'rx3 mismatched');
    expect(linkOf(b, 'tx-rx3')).toMatchObject({ layout: '3x1x30', frames: 216 });
    expect(linkOf(b, 'tx-rx3').reason).toBe(
      'tx-rx3 mismatched: it sends 3x1x30 (rx x tx x subcarriers), the site says 3x3 antennas and 30 subcarriers as tx-rx1; poses go on from tx-rx1, this link is not joined',
    );
    expect(b.components.csi_processor.status).toBe('degraded');
    expect((await status('a')).components.csi_receiver.status).toBe('degraded');
    expect((renderStatusMessage(s.svc.snapshot()) as StatusMessage).status.system_health).toBe('degraded');
    b = await until(async () => {
      const d = await status();
      return d.performance.pose_frames >= 12 ? d : undefined;
    }, '12 pose frames');
    expect(b.performance.pose_frames).toBe(12);

    // The primary stops; rx2 and rx3 (3x3 again) go on. Within the timeout the primary is stopped:
    // the status names it, the service is degraded, and no pose frame comes from the others.
    let stopped: LinkStatus | undefined;
    const probe = (async () => {
      stopped = await until(async () => {
        const d = await status();
        return linkOf(d, 'tx-rx1').state === 'stopped' ? d : undefined;
      }, 'the primary stopped');
    })();
    await pump([1, 2], 1000, () => stopped !== undefined);
    await probe;
    const p = linkOf(stopped!, 'tx-rx1');
    expect(p).toMatchObject({ primary: true, frames: 216 });
    expect(p.reason).toMatch(/^tx-rx1 stopped: no packet for \d+\.\d s \(timeout 2\.0 s\); the model reads this link: no poses while it is stopped$/);
    expect(linkOf(stopped!, 'tx-rx2').state).toBe('live');
    expect(linkOf(stopped!, 'tx-rx3').state).toBe('live');
    expect(linkOf(stopped!, 'tx-rx3').layout).toBe('3x3x30');
    expect(stopped!.components.csi_processor!.status).toBe('degraded');
    expect((renderStatusMessage(s.svc.snapshot()) as StatusMessage).status.system_health).toBe('degraded');
    const after = await status();
    expect(after.performance.frames_processed).toBeGreaterThan(648);
    expect(after.performance.pose_frames).toBe(12);
    expect((await status('a')).network.connected_routers).toBe(2);
  });
});

describe('links of a configured site', () => {
  let s: TestServer;
  let token: string;
  let port: number;
  beforeAll(async () => {
    port = await freeUdpPort();
    // A router `ap` and two receivers, `front` and `side`: the links are ap-front (primary) and ap-side.
    const radio = { z: 1.2, antennas: 3, spacing_m: 0.029, format: 'intel5300' };
    const radios = [
      { id: 'ap', role: 'tx', x: 3, y: 4.8, yaw_deg: 270, ...radio },
      { id: 'front', role: 'rx', x: 3, y: 0.2, yaw_deg: 90, ...radio },
      { id: 'side', role: 'rx', x: 0.2, y: 2.5, yaw_deg: 0, ...radio },
    ];
    s = await startServer({
      model: true,
      autostart: true,
      rateLimitScale: 50,
      source: `udp://127.0.0.1:${port}?format=intel5300`,
      config: { environment: { site: { radios } } },
    });
    token = await s.login();
    await waitForStatus(s, token, 'running');
  });
  afterAll(() => s?.close());

  it("reads the site's radios from environment.site.radios: frames that name no link are its primary's", async () => {
    const sender = createSocket('udp4');
    try {
      const sim = new CsiSimulator({ seed: 3, people: 1 });
      for (let k = 0; k < 20; k++) {
        const record = encodeIntel5300({ ...sim.next().frame, seq: k });
        await new Promise<void>((resolve, reject) => sender.send(record, port, '127.0.0.1', (e) => (e ? reject(e) : resolve())));
      }
    } finally {
      sender.close();
    }
    const b = await until(async () => {
      const r = await s.api('GET', '/system/status', { token });
      return r.body.data.components.csi_processor.links[0]?.frames === 20 ? r.body.data : undefined;
    }, '20 packets on the primary link');
    expect(b.components.csi_processor.links.map((l: WireLink) => [l.link_id, l.tx, l.rx, l.primary, l.state, l.frames])).toEqual([
      ['ap-front', 'ap', 'front', true, 'live', 20],
      ['ap-side', 'ap', 'side', false, 'waiting', 0],
    ]);
    // A receiver not installed yet is not a fault.
    expect(b.components.csi_processor.status).toBe('active');
    expect((renderStatusMessage(s.svc.snapshot()) as StatusMessage).status.system_health).toBe('healthy');
  });
});
