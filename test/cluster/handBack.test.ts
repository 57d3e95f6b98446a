/**
 * A worker giving a room back, and a worker reading what was published before it, on a real NATS
 * server with the real ingest and worker nodes in this process.
 *
 * - A room given back (the worker closing, or letting it go to a worker that joined) records how
 *   far it was read, so the next holder replays from there, not from an older periodic checkpoint.
 * - A worker replaying a room up to the checkpoint it started from never writes a checkpoint below
 *   it (killed during the replay, the next holder would replay further back still).
 * - A worker started with the name of a live one is refused.
 * - The last pose frame published for a room is read back from the stream; a stream that cannot
 *   say is an error, never "nothing published" (a takeover would publish again what was).
 */
import { expect, it } from 'vitest';
import { Bus, bucketKey, CSI_STREAM, POSE_STREAM, poseSubject } from '../../src/bus/bus.js';
import { encodePoseFrame } from '../../src/bus/codec.js';
import { IngestNode } from '../../src/cluster/ingest.js';
import { lastPublished, WorkerNode, type Checkpoint } from '../../src/cluster/worker.js';
import type { PoseFrame } from '../../src/pose/types.js';
import type { Logger } from '../../src/service/service.js';
import { describeWithNats, useNatsAndConfig } from '../helpers/nats.js';
import { until } from '../helpers/engines.js';

/** Give-up bound: a safety net, not a measurement. */
const GIVE_UP_MS = 60_000;
const quiet: Logger = () => undefined;

describeWithNats('a worker giving a room back', () => {
  const engines = useNatsAndConfig('csipose-handback-');

  it('records how far it read when it gives the room back', async () => {
    // Periodic checkpoints far apart: the only one written in this test is the hand-back's.
    const settings = { ...engines.config.get().cluster, checkpoint_interval_seconds: 60 };
    const bus = await Bus.connect(engines.nats.url, settings, 'handback-test');
    const env = engines.config.get().environment.id;
    const ingest = await IngestNode.start(bus, engines.config.get(), 'sim?seed=3', quiet);
    const worker = await WorkerNode.start(bus, settings, quiet, 'w-handback');
    try {
      await until(() => (worker.figures()[env]?.made ?? 0) > 20, GIVE_UP_MS, 'pose frames from the worker');
      expect(await bus.checkpoints.get(bucketKey(env))).toBeNull();
      await worker.close();
      const entry = await bus.checkpoints.get(bucketKey(env));
      expect(entry?.operation).toBe('PUT');
      const cp = JSON.parse(new TextDecoder().decode(entry!.value)) as Checkpoint;
      expect(cp.worker).toBe('w-handback');
      // How far it read: past the frames that made the pose frames counted above.
      expect(cp.seq).toBeGreaterThan(20);
      expect(cp.nextTrackId).toBeGreaterThanOrEqual(1);
    } finally {
      await worker.close();
      await ingest.close();
      await bus.close();
    }
  }, 120_000);

  it('never moves the checkpoint back while it replays up to it, periodically or when it gives the room back', async () => {
    // Checkpoints every 0.1 s, and a rewind reaching the start of the stream: a long replay.
    const settings = { ...engines.config.get().cluster, checkpoint_interval_seconds: 0.1, rewind_seconds: 120 };
    const bus = await Bus.connect(engines.nats.url, settings, 'replay-test');
    const env = 'replay-room';
    const room = { ...engines.config.get(), environment: { ...engines.config.get().environment, id: env } };
    const ingest = await IngestNode.start(bus, room, 'sim?seed=4', quiet);
    let worker: WorkerNode | undefined;
    const written: Checkpoint[] = [];
    const watch = await bus.checkpoints.watch({ key: bucketKey(env) });
    try {
      // Some 3,000 CSI frames of the room, then a checkpoint at the last of them, as a worker that
      // held the room before would have left it.
      await until(async () => (await bus.jsm.streams.info(CSI_STREAM)).state.messages > 3000, GIVE_UP_MS, 'CSI frames on the bus');
      await ingest.close();
      const state = (await bus.jsm.streams.info(CSI_STREAM)).state;
      const start: Checkpoint = { seq: state.last_seq, streamTime: Date.parse(state.last_ts), nextTrackId: 1, worker: 'earlier' };
      await bus.checkpoints.put(bucketKey(env), JSON.stringify(start));
      void (async () => {
        for await (const e of watch) if (e.operation === 'PUT') written.push(JSON.parse(new TextDecoder().decode(e.value)) as Checkpoint);
      })();
      worker = await WorkerNode.start(bus, settings, quiet, 'w-replay');
      // Given back in the middle of its replay, as soon as it made a pose frame of the room.
      await until(() => (worker!.figures()[env]?.made ?? 0) > 0, GIVE_UP_MS, 'pose frames of the replay');
      await new Promise((ok) => setTimeout(ok, 300));
      await worker.close();
      const mine = written.filter((c) => c.worker === 'w-replay');
      for (const c of mine) expect(c.seq, JSON.stringify(c)).toBeGreaterThanOrEqual(start.seq);
      const entry = await bus.checkpoints.get(bucketKey(env));
      expect((JSON.parse(new TextDecoder().decode(entry!.value)) as Checkpoint).seq).toBeGreaterThanOrEqual(start.seq);
    } finally {
      watch.stop();
      await worker?.close();
      await ingest.close();
      await bus.close();
    }
  }, 120_000);

  it('refuses a worker with the name of a live one, and gives the name back once that one is gone', async () => {
    const settings = { ...engines.config.get().cluster, lease_ttl_seconds: 1 };
    const bus = await Bus.connect(engines.nats.url, settings, 'name-test');
    const first = await WorkerNode.start(bus, settings, quiet, 'w-same');
    try {
      await expect(WorkerNode.start(bus, settings, quiet, 'w-same')).rejects.toThrow(/another live node has the name w-same/);
      await first.close();
      const again = await WorkerNode.start(bus, settings, quiet, 'w-same');
      await again.close();
    } finally {
      await first.close();
      await bus.close();
    }
  }, 60_000);

  it('reads the last pose frame published, and fails rather than say "none" when the stream cannot answer', async () => {
    const bus = await Bus.connect(engines.nats.url, engines.config.get().cluster, 'last-published-test');
    try {
      expect(await lastPublished(bus, 'room-never-published')).toBeUndefined();
      const frame: PoseFrame = {
        frameId: 1,
        time: 1_700_000_000_123,
        sourceId: 'test',
        environmentId: 'room-a',
        persons: [],
        processingMs: 1,
        modelVersion: 'test',
        csiQuality: 1,
      };
      await bus.js.publish(poseSubject('room-a'), encodePoseFrame(frame));
      expect((await lastPublished(bus, 'room-a'))?.time).toBe(1_700_000_000_123);
      // The stream gone: an error, where "nothing published" would replay and publish again.
      await bus.jsm.streams.delete(POSE_STREAM);
      await expect(lastPublished(bus, 'room-a')).rejects.toThrow();
    } finally {
      await bus.close();
    }
  }, 60_000);
});
