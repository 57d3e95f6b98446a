/**
 * An ingest node on a real NATS server publishes a link's frames that came within one turn of the
 * event loop as one message: a real Intel 5300 capture replayed as fast as possible reaches the
 * stream in far fewer messages than frames, and reads back as exactly the capture's frames, in
 * order.
 */
import { expect, it } from 'vitest';
import { Bus, CSI_STREAM, csiSubjects } from '../../src/bus/bus.js';
import { decodeCsiFrames } from '../../src/bus/codec.js';
import type { CsiFrame } from '../../src/csi/frame.js';
import { IngestNode } from '../../src/cluster/ingest.js';
import { decodeIntel5300 } from '../../src/decoders/intel5300.js';
import type { Logger } from '../../src/service/service.js';
import { describeWithNats, useNatsAndConfig } from '../helpers/nats.js';
import { until } from '../helpers/engines.js';
import { haveSamples, sample, sampleBytes } from '../helpers/samples.js';

/** Give-up bound: a safety net, not a measurement. */
const GIVE_UP_MS = 60_000;
const CAPTURE = 'intel5300/log.all_csi.6.7.6';

describeWithNats('an ingest node', () => {
  const engines = useNatsAndConfig('csipose-ingest-');

  it.skipIf(!haveSamples)(
    'publishes a capture replayed fast in batches, which read back as the capture, frame for frame',
    async () => {
      const env = 'ingest-room';
      const room = { ...engines.config.get(), environment: { ...engines.config.get().environment, id: env } };
      const bus = await Bus.connect(engines.nats.url, room.cluster, 'ingest-test');
      const lines: string[] = [];
      const log: Logger = (_level, msg) => lines.push(msg);
      const ingest = await IngestNode.start(bus, room, `file:${sample(CAPTURE)}?speed=0`, log);
      try {
        await until(() => lines.some((l) => /the stream took all \d+ frames/.test(l)), GIVE_UP_MS, 'the capture on the bus');
        const { frames: capture } = decodeIntel5300(sampleBytes(CAPTURE));
        expect(ingest.figures().frames).toBe(capture.length);
        const { state } = await bus.jsm.streams.info(CSI_STREAM);
        const consumer = await bus.js.consumers.get(CSI_STREAM, { filterSubjects: csiSubjects(env) });
        const read: CsiFrame[] = [];
        let messages = 0;
        for await (const m of await consumer.fetch({ max_messages: state.messages, expires: 5000 })) {
          messages++;
          read.push(...decodeCsiFrames(m.data));
        }
        // A batch per turn of the event loop (up to 64 frames of a link), not a message per frame.
        expect(messages).toBeLessThan(capture.length / 8);
        expect(read.map((f) => f.index)).toEqual(capture.map((f) => f.index));
        expect(read.map((f) => f.clockUs)).toEqual(capture.map((f) => f.clockUs));
        for (let i = 0; i < read.length; i++) expect(read[i]!.csi).toEqual(capture[i]!.csi);
      } finally {
        await ingest.close();
        await bus.close();
      }
    },
    120_000,
  );
});
