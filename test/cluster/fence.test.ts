/**
 * A worker whose lease lapsed while it could not run (a process starved of CPU, or stopped) does
 * not publish for the room once it runs again: it publishes only within three quarters of a
 * lease's life of its last renewal, and what it made past that waits for a renewal, which finds the
 * room taken. Real processes: nats-server, an ingest node and two workers; the first worker is
 * stopped (SIGSTOP) until the other has taken its room over, then let go on (SIGCONT).
 *
 * What every publish on `pose.<env>` carries reaches a plain subscription, even a publish the
 * stream then drops as a duplicate: there each frame time must come once, rising.
 */
import { expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LEASES_BUCKET, poseSubject } from '../../src/bus/bus.js';
import { decodePoseFrame } from '../../src/bus/codec.js';
import { describeWithNats, useNatsRoles } from '../helpers/nats.js';
import { until } from '../helpers/engines.js';

/** Give-up bound: a safety net, not a measurement. */
const GIVE_UP_MS = 60_000;
const ENV = 'fenced-room';

describeWithNats('a worker whose lease lapsed while it was stopped', () => {
  const bus = useNatsRoles('csipose-fence-');
  const dir = bus.dir;

  const node = bus.role;

  it('publishes nothing for the room once it runs again: every frame time reaches a subscriber once, rising', async () => {
    const config = join(dir, 'room.json');
    writeFileSync(config, JSON.stringify({ environment: { id: ENV }, cluster: { lease_ttl_seconds: 2, checkpoint_interval_seconds: 0.5 } }));
    const times: number[] = [];
    const sub = bus.nc.subscribe(poseSubject(ENV), { callback: (_e, m) => times.push(decodePoseFrame(m.data).time) });
    const holder = async () => {
      const e = await (await bus.nc.jetstream().views.kv(LEASES_BUCKET)).get(ENV);
      return e && e.operation === 'PUT' ? e.string() : undefined;
    };
    try {
      await node('ingest', ['--role', 'ingest', '--config', config, '--source', 'sim?seed=8']);
      const first = await node('w1', ['--role', 'worker', '--name', 'w1', '--config', config]);
      await until(async () => (await holder()) === 'w1', GIVE_UP_MS, 'w1 to hold the room');
      await until(() => times.length > 20, GIVE_UP_MS, 'pose frames from w1');
      await node('w2', ['--role', 'worker', '--name', 'w2', '--config', config]);

      // w1 stops running; its lease lapses, and w2 takes the room over and publishes.
      first.child.kill('SIGSTOP');
      await until(async () => (await holder()) === 'w2', GIVE_UP_MS, 'w2 to take the room over');
      const taken = times.length;
      await until(() => times.length > taken + 20, GIVE_UP_MS, 'pose frames from w2');
      // w1 runs again, its CSI queued and its renewal late.
      first.child.kill('SIGCONT');
      await until(() => /lost the lease of fenced-room/.test(first.stdout() + first.stderr()), GIVE_UP_MS, 'w1 to find its lease lost');
      const after = times.length;
      await until(() => times.length > after + 20, GIVE_UP_MS, 'pose frames from w2 after w1 ran again');

      for (let i = 1; i < times.length; i++) expect(times[i]!, `frame ${i} of ${times.length}`).toBeGreaterThan(times[i - 1]!);
      expect(await holder()).toBe('w2');
    } finally {
      sub.unsubscribe();
    }
  }, 240_000);
});
