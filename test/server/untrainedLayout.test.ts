import { createSocket } from 'node:dgram';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { decodeEsp32 } from '../../src/decoders/esp32.js';
import { startServer, until, waitForStatus, type TestServer } from '../helpers/server.js';
import { describeWithSamples, esp32Lines, sampleBytes } from '../helpers/samples.js';
import { freeUdpPort } from '../helpers/sources.js';

/**
 * Issue 17, item 12a, in the service: a live link whose CSI layout the model was not trained on is
 * not read (its windows are dropped) and `/system/status` says which link and why; a submission
 * of such CSI to `POST /pose/process` is refused with 503 MODEL_ERROR naming the layout. Real
 * ESP32 packets (1x1 antennas, 64 subcarriers) from the capture, over a real UDP socket.
 */

describeWithSamples('untrained CSI layouts in the service', () => {
  let s: TestServer;
  let token: string;
  let port: number;
  beforeAll(async () => {
    port = await freeUdpPort();
    s = await startServer({ model: true, autostart: true, rateLimitScale: 50, source: `udp://127.0.0.1:${port}?format=esp32` });
    token = await s.login();
    await waitForStatus(s, token, 'running');
  });
  afterAll(() => s?.close());

  const esp32 = () => decodeEsp32(sampleBytes('esp32/example_csi.csv')).frames;

  it('POST /pose/process with the ESP32 packets: 503 MODEL_ERROR naming the layout; a trained layout still answers', async () => {
    const frames = esp32().map((f) => ({
      antenna_data: [Array.from({ length: f.nSub }, (_, sc) => ({ real: f.csi[2 * sc]!, imag: f.csi[2 * sc + 1]! }))],
    }));
    const r = await s.api('POST', '/pose/process', { token, body: { csi_data: { frames } } });
    expect(r.status, r.text).toBe(503);
    expect(r.body.error.code).toBe('MODEL_ERROR');
    expect(r.body.error.message).toMatch(
      /not trained on the CSI layout of process:\S+: 1x1 antennas, 64 subcarriers spanning 20 MHz, band unknown; not trained on 64 subcarriers/,
    );

    // 3 antennas x 30 subcarriers: the layout the shipped model reads.
    const antenna_data = [0, 1, 2].map((rx) => Array.from({ length: 30 }, (_, sc) => ({ real: Math.cos(sc * 0.2 + rx), imag: Math.sin(sc * 0.2 + rx) })));
    const ok = await s.api('POST', '/pose/process', { token, body: { csi_data: { antenna_data } } });
    expect(ok.status, ok.text).toBe(200);
  });

  it('a live ESP32 link: no pose frames from it, the service keeps running, /system/status names the link, its layout and why', async () => {
    const lines = esp32Lines();
    const sender = createSocket('udp4');
    try {
      // 160 packets: the 128-frame window fills and hops 8 frames at a time (5 windows).
      for (let i = 0; i < 160; i++) {
        await new Promise<void>((resolve, reject) => sender.send(lines[i % lines.length]!, port, '127.0.0.1', (e) => (e ? reject(e) : resolve())));
      }
    } finally {
      sender.close();
    }
    const source = `udp://127.0.0.1:${port}`;
    const b = await until(async () => {
      const r = await s.api('GET', '/system/status', { token });
      return r.body.data.components.neural_network.untrained_links.length > 0 ? r.body.data : undefined;
    }, 'an untrained link in /system/status');
    expect(b.status).toBe('running');
    expect(b.components.neural_network.status).toBe('degraded');
    const [link] = b.components.neural_network.untrained_links;
    expect(link).toMatchObject({
      source_id: source,
      environment_id: 'default',
      layout: '1x1 antennas, 64 subcarriers spanning 20 MHz, 2.4 GHz',
      reason:
        '1x1 antennas, 64 subcarriers spanning 20 MHz, 2.4 GHz: the model was not trained on 64 subcarriers spanning 20 MHz ' +
        '(trained: 30 spanning 20 MHz, 56 spanning 20 MHz, 114 spanning 40 MHz); 2.4 GHz (trained: 5 GHz)',
    });
    expect(link.windows_dropped).toBeGreaterThanOrEqual(1);
    expect(Number.isNaN(Date.parse(link.last_dropped))).toBe(false);
    expect(b.performance.frames_processed).toBeGreaterThanOrEqual(128);
    expect(b.performance.pose_frames).toBe(0);

    const a = await s.api('GET', '/system/status', { token, form: 'a' });
    expect(a.body.components.neural_network.status).toBe('degraded');
    expect(a.body.components.neural_network.untrained_links[0].source_id).toBe(source);
  });
});
