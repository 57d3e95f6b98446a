/**
 * An api node's feed (poseFeed) on a real NATS server: every environment's pose frames, decoded
 * to what the worker encoded, in their order; a message that is not a pose frame is logged and
 * skipped; the feed ends when the bus closes (the service takes that as a fault), and errs when
 * the server refuses the subscription.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { connect } from 'nats';
import { Bus, poseSubject } from '../../src/bus/bus.js';
import { encodePoseFrame } from '../../src/bus/codec.js';
import { poseFeed } from '../../src/cluster/feeds.js';
import type { PoseFrame } from '../../src/pose/types.js';
import { describeWithNats, ensureNatsServer, startNats, type NatsCluster } from '../helpers/nats.js';
import { accepts, freePort, until } from '../helpers/engines.js';

const SETTINGS = { replicas: 1, csi_retention_seconds: 300, lease_ttl_seconds: 2 };

function frame(env: string, frameId: number): PoseFrame {
  return {
    frameId,
    time: 1_767_225_600_000 + frameId * 100,
    sourceId: 'sim',
    environmentId: env,
    persons: [
      {
        slot: 0,
        confidence: 0.9,
        keypoints: Float32Array.from({ length: 51 }, (_, i) => (i === 4 ? NaN : frameId + i / 7)),
        bbox: Float32Array.of(1, 2, 3, 4),
        floor: { x: 1.5, y: Infinity },
        trackId: 3,
      },
    ],
    processingMs: 2,
    modelVersion: '2.0.0',
    csiQuality: 0.9,
  };
}

describeWithNats('the pose feed of an api node', () => {
  let nats: NatsCluster;
  let reader: Bus;
  let writer: Bus;

  beforeAll(async () => {
    nats = await startNats(1);
    reader = await Bus.connect(nats.url, SETTINGS, 'feed-test-reader');
    writer = await Bus.connect(nats.url, SETTINGS, 'feed-test-writer');
  }, 60_000);
  afterAll(async () => {
    await writer?.close();
    await reader?.close();
    await nats?.stop();
  });

  it('hands on every frame decoded, in order, skips what is not a frame, and ends with the bus', async () => {
    const got: PoseFrame[] = [];
    const warnings: string[] = [];
    let ended = false;
    const sub = poseFeed(reader, (level, msg) => {
      if (level === 'warn') warnings.push(msg);
    }).subscribe({ next: (f) => got.push(f), complete: () => (ended = true) });
    await reader.nc.flush();
    const sent: PoseFrame[] = [];
    for (let i = 0; i < 40; i++) {
      const f = frame(i % 2 ? 'ward-b' : 'ward.a', i);
      sent.push(f);
      writer.nc.publish(poseSubject(f.environmentId), encodePoseFrame(f));
      if (i === 10) writer.nc.publish(poseSubject('ward-b'), new TextEncoder().encode('{"not":"a frame"}'));
    }
    await writer.nc.flush();
    await until(async () => got.length >= sent.length, 10_000, 'every frame');
    expect(got).toEqual(sent);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/^pose\.ward-b: not an encoded pose frame/);
    expect(ended).toBe(false);
    await reader.close();
    await until(async () => ended, 10_000, 'the feed to end');
    sub.unsubscribe();
  });

  it('hands on a frame it gets twice once (a worker sending a publish again), and an earlier frame of a source started again', async () => {
    const bus = await Bus.connect(nats.url, SETTINGS, 'feed-test-twice');
    try {
      const got: PoseFrame[] = [];
      const sub = poseFeed(bus, () => undefined).subscribe({ next: (f) => got.push(f) });
      await bus.nc.flush();
      const [a, b, again] = [frame('ward-c', 5), frame('ward-c', 6), frame('ward-c', 1)];
      // b sent again after its acknowledgement timed out, as the Publisher does: the same bytes.
      for (const f of [a, b, b, again]) writer.nc.publish(poseSubject(f.environmentId), encodePoseFrame(f));
      // Another room's frame of the same time is its own.
      writer.nc.publish(poseSubject('ward-d'), encodePoseFrame(frame('ward-d', 6)));
      await writer.nc.flush();
      await until(async () => got.length >= 4, 10_000, 'the frames');
      await new Promise((ok) => setTimeout(ok, 200));
      expect(got.map((f) => `${f.environmentId} ${f.frameId}`)).toEqual(['ward-c 5', 'ward-c 6', 'ward-c 1', 'ward-d 6']);
      sub.unsubscribe();
    } finally {
      await bus.close();
    }
  });

  it('errs with the reason when the server refuses the subscription, instead of leaving it unhandled', async () => {
    // A server of its own whose one user may not subscribe to the pose subjects.
    const dir = mkdtempSync(join(tmpdir(), 'csipose-feed-denied-'));
    const port = await freePort();
    const conf = join(dir, 'denied.conf');
    writeFileSync(
      conf,
      `listen: 127.0.0.1:${port}\nauthorization { users = [ { user: api, password: api-pass, permissions: { subscribe: { deny: ["pose.>"] } } } ] }\n`,
    );
    const server = spawn(ensureNatsServer()!, ['-c', conf], { stdio: 'ignore' });
    try {
      await until(() => accepts(port), 20_000, 'nats-server');
      const nc = await connect({ servers: `nats://127.0.0.1:${port}`, user: 'api', pass: 'api-pass' });
      try {
        const failed = new Promise<unknown>((ok) => {
          // Only the connection is read of the bus.
          poseFeed({ nc } as unknown as Bus, () => undefined).subscribe({ error: ok, complete: () => ok('completed') });
        });
        const nothing = new Promise((ok) => setTimeout(() => ok('nothing within 10 s'), 10_000));
        expect(String(await Promise.race([failed, nothing]))).toMatch(/permissions violation/i);
      } finally {
        await nc.close();
      }
    } finally {
      server.kill();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
