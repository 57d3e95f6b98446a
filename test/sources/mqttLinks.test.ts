import type { MqttClient } from 'mqtt';
import type { Observable, Subscription } from 'rxjs';
import { afterEach, beforeAll, expect, it } from 'vitest';
import type { CsiFrame } from '../../src/csi/frame.js';
import type { RadioConfig } from '../../src/csi/radios.js';
import { mqttSource, newMqttStats } from '../../src/sources/mqtt.js';
import { LinkResolver } from '../../src/sources/links.js';
import { parseSource, SourceError } from '../../src/sources/uri.js';
import { connectPublisher, describeWithMosquitto, pollUntil, startBroker, type Broker } from '../helpers/mosquitto.js';
import { describeWithSamples, esp32Lines } from '../helpers/samples.js';

/** Safety net so a lost message fails the test instead of hanging it; not a measurement. */
const GIVE_UP_MS = 20_000;

const SITE: RadioConfig[] = [
  { id: 'ap', role: 'tx', x: 3, y: 4.8, z: 1.2, yaw_deg: 270, antennas: 3, spacing_m: 0.029, format: 'esp32' },
  { id: 'rx1', role: 'rx', x: 3, y: 0.2, z: 1.2, yaw_deg: 90, antennas: 3, spacing_m: 0.029, format: 'esp32' },
  { id: 'rx2', role: 'rx', x: 0.2, y: 2.5, z: 1.2, yaw_deg: 0, antennas: 3, spacing_m: 0.029, format: 'esp32' },
];

/** Polls `cond` until it holds; throws `what` after GIVE_UP_MS. */
const until = (cond: () => boolean, what: () => string): Promise<void> => pollUntil(cond, what, GIVE_UP_MS);

describeWithMosquitto('mqtt sources: a topic per link, with a real mosquitto', () => {
  let broker: Broker;
  let pub: MqttClient | undefined;
  const subs: Subscription[] = [];
  beforeAll(async () => {
    broker = await startBroker();
    return () => broker.stop();
  });
  afterEach(async () => {
    subs.splice(0).forEach((s) => s.unsubscribe());
    await pub?.endAsync();
    pub = undefined;
  });

  describeWithSamples('with the ESP32 capture', () => {
    it('link=topic: the last level of each topic names the receiver; topics naming no receiver are dropped and counted', async () => {
      const lines = esp32Lines();
      const stats = newMqttStats();
      const resolver = new LinkResolver(SITE);
      const frames: CsiFrame[] = [];
      const errors: unknown[] = [];
      let ready = false;
      subs.push(
        mqttSource({
          url: broker.url,
          topic: 'csi/room/+',
          format: 'esp32',
          stats,
          linkOfTopic: (t) => resolver.find(t.slice(t.lastIndexOf('/') + 1)),
          onReady: () => (ready = true),
        }).subscribe({ next: (f) => frames.push(f), error: (e) => errors.push(e) }),
      );
      await until(
        () => ready || errors.length > 0,
        () => 'no SUBACK',
      );
      pub = await connectPublisher(broker.url);
      for (let i = 0; i < 6; i++) {
        await pub.publishAsync('csi/room/rx1', lines[i]!);
        await pub.publishAsync('csi/room/rx9', lines[i]!);
        await pub.publishAsync('csi/room/rx2', lines[6 + i]!);
      }
      await until(
        () => stats.messages >= 18,
        () => `${stats.messages} of 18 messages`,
      );
      expect(errors).toEqual([]);
      const rx1 = frames.filter((f) => f.linkId === 'ap-rx1');
      const rx2 = frames.filter((f) => f.linkId === 'ap-rx2');
      expect(rx1).toHaveLength(6);
      expect(rx2).toHaveLength(6);
      expect(frames).toHaveLength(12);
      // Each topic keeps its own decoder (its own record index) and sourceId.
      expect(rx1.map((f) => [f.index, f.sourceId])).toEqual(Array.from({ length: 6 }, (_, i) => [i, 'csi/room/rx1']));
      expect(rx2.map((f) => [f.index, f.sourceId])).toEqual(Array.from({ length: 6 }, (_, i) => [i, 'csi/room/rx2']));
      expect(stats).toMatchObject({ messages: 18, records: 12, unknownLink: 6, skipped: 0 });
    });

    it('parseSource: link=topic and link=RX take the transmitter from the site; an unknown fixed receiver errors', async () => {
      const lines = esp32Lines();
      const open = (uri: string, radios?: readonly RadioConfig[]) => {
        const frames: CsiFrame[] = [];
        const errors: unknown[] = [];
        subs.push(
          (parseSource(uri).open('frame', radios ? { radios: () => radios } : {}) as Observable<CsiFrame>).subscribe({
            next: (f) => frames.push(f),
            error: (e) => errors.push(e),
          }),
        );
        return { frames, errors };
      };
      const byTopic = open(`${broker.url}/csi/house/+?format=esp32&link=topic`, SITE);
      const fixed = open(`${broker.url}/csi/fixed/x?format=esp32&link=rx2`);
      const bad = open(`${broker.url}/csi/fixed/x?format=esp32&link=rx7`, SITE);
      expect(bad.errors).toHaveLength(1);
      expect(bad.errors[0]).toBeInstanceOf(SourceError);
      expect((bad.errors[0] as Error).message).toMatch(/link "rx7" of mqtt topic "csi\/fixed\/x" is not a receiver of this site \(receivers: rx1, rx2\)/);
      pub = await connectPublisher(broker.url);
      // The sources subscribe in their own time: publish until each has something.
      await until(
        () => {
          void pub!.publishAsync('csi/house/rx1', lines[0]!);
          void pub!.publishAsync('csi/house/rx2', lines[1]!);
          void pub!.publishAsync('csi/fixed/x', lines[2]!);
          return byTopic.frames.some((f) => f.linkId === 'ap-rx1') && byTopic.frames.some((f) => f.linkId === 'ap-rx2') && fixed.frames.length > 0;
        },
        () => `${byTopic.frames.length} and ${fixed.frames.length} frames`,
      );
      expect(new Set(byTopic.frames.map((f) => `${f.linkId} ${f.sourceId}`))).toEqual(new Set(['ap-rx1 csi/house/rx1', 'ap-rx2 csi/house/rx2']));
      // Without a site the transmitter is "tx".
      expect(new Set(fixed.frames.map((f) => f.linkId))).toEqual(new Set(['tx-rx2']));
    });
  });
});
