import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { accepts, findExecutable, freePort } from './engines.js';
import mqtt, { type MqttClient } from 'mqtt';
import { describe, it } from 'vitest';

/** Give-up bound for the broker to accept connections; a safety net, not a measurement. */
const START_GIVE_UP_MS = 10_000;
/** Give-up bound for the broker to exit once killed. */
const STOP_GIVE_UP_MS = 10_000;

const MISSING = 'mosquitto is not installed: .ci/run installs it with apt-get install -y mosquitto';

/**
 * The mosquitto broker executable, looked up in PATH and /usr/sbin.
 * @returns its path, or undefined when it is not installed
 * @example
 * if (!mosquittoPath()) console.log('apt-get install -y mosquitto');
 */
export function mosquittoPath(): string | undefined {
  return findExecutable('mosquitto');
}

/**
 * `describe` for suites that need a real mosquitto broker. Without mosquitto the suite is skipped
 * with the reason in its title, except under CI (`CI` set), where a missing broker must not pass
 * unnoticed: the suite then holds one failing test saying how to install it.
 * @example
 * describeWithMosquitto('mqttSource', () => { it('...', () => withBroker(async (b) => ...)); });
 */
export function describeWithMosquitto(name: string, fn: () => void): void {
  if (mosquittoPath()) {
    describe(name, fn);
  } else if (process.env.CI) {
    describe(name, () =>
      it('needs mosquitto', () => {
        throw new Error(MISSING);
      }),
    );
  } else {
    // The body is not run: it would only register tests that cannot run.
    describe.skip(`${name} (skipped: mosquitto not found in PATH or /usr/sbin; apt-get install -y mosquitto)`, () => it('needs mosquitto', () => undefined));
  }
}

/** A mosquitto broker on 127.0.0.1 started by a test. */
export interface Broker {
  readonly host: '127.0.0.1';
  readonly port: number;
  /** `mqtt://127.0.0.1:PORT` */
  readonly url: string;
  /** Kills the broker, waits for it to exit and removes its temp dir; safe to call again. */
  stop(): Promise<void>;
  /** Starts it again on the same port (reconnect tests); resolves once it accepts connections. */
  start(): Promise<void>;
  /** Everything the broker logged since it was first started. */
  logs(): string;
}

export interface BrokerOptions {
  /** User name -> password; when given, anonymous clients are refused. Needs mosquitto_passwd. */
  users?: Record<string, string>;
}

/** Writes mosquitto.conf (and the password file) into `dir`; returns the config's path. */
function writeConfig(dir: string, port: number, users: Record<string, string> | undefined): string {
  const lines = [
    `listener ${port} 127.0.0.1`,
    'persistence false',
    'log_dest stderr',
    // Everything but the per-packet debug lines: connects, disconnects, subscriptions.
    'log_type error',
    'log_type warning',
    'log_type notice',
    'log_type information',
    'log_type subscribe',
    'log_type unsubscribe',
    // Run as root, mosquitto drops to user "mosquitto", which cannot read our 0700 temp dir.
    `user ${userInfo().username}`,
  ];
  if (users) {
    const passwd = findExecutable('mosquitto_passwd');
    if (!passwd) throw new Error('mosquitto_passwd is not installed: a broker with users cannot be made');
    const file = join(dir, 'passwd');
    Object.entries(users).forEach(([user, password], i) => {
      const args = ['-b', ...(i === 0 ? ['-c'] : []), file, user, password];
      const r = spawnSync(passwd, args, { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`mosquitto_passwd failed: ${r.stderr}`);
    });
    lines.push('allow_anonymous false', `password_file ${file}`);
  } else {
    lines.push('allow_anonymous true');
  }
  const conf = join(dir, 'mosquitto.conf');
  writeFileSync(conf, lines.join('\n') + '\n');
  return conf;
}

/**
 * Starts a private mosquitto on 127.0.0.1 and a free port, with its config in a fresh temp dir.
 *
 * @param opts `users` to require a user name and password
 * @returns the running broker; `stop()` it when done (or use {@link withBroker})
 * @throws Error with the broker's log when it does not accept connections within ~10 s
 * @example
 * const b = await startBroker({ users: { alice: 's3cret' } });
 * try { ... b.url ... } finally { await b.stop(); }
 */
export async function startBroker(opts: BrokerOptions = {}): Promise<Broker> {
  const exe = mosquittoPath();
  if (!exe) throw new Error(MISSING);
  const port = await freePort();
  let log = '';
  let child: ChildProcess | undefined;
  let dir: string | undefined;

  const start = async (): Promise<void> => {
    if (child) return;
    dir = mkdtempSync(join(tmpdir(), 'csipose-mosquitto-'));
    const conf = writeConfig(dir, port, opts.users);
    const proc = spawn(exe, ['-c', conf], { stdio: ['ignore', 'pipe', 'pipe'] });
    child = proc;
    proc.stdout!.on('data', (c: Buffer) => (log += c.toString('utf8')));
    proc.stderr!.on('data', (c: Buffer) => (log += c.toString('utf8')));
    let exited = false;
    proc.once('exit', () => (exited = true));
    const deadline = Date.now() + START_GIVE_UP_MS;
    while (!(await accepts(port))) {
      if (exited || Date.now() > deadline) {
        await stop();
        throw new Error(`mosquitto did not start on port ${port}${exited ? ' (it exited)' : ''}; its log:\n${log}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  const stop = async (): Promise<void> => {
    const proc = child;
    child = undefined;
    if (proc && proc.exitCode === null && proc.signalCode === null) {
      const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), STOP_GIVE_UP_MS);
      await exited;
      clearTimeout(timer);
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  };

  await start();
  return { host: '127.0.0.1', port, url: `mqtt://127.0.0.1:${port}`, stop, start, logs: () => log };
}

/**
 * Runs `fn` with a fresh broker, stopping it afterwards whatever happens.
 * @example
 * await withBroker(async (b) => { ... b.url ... }, { users: { alice: 'pw' } });
 */
export async function withBroker<T>(fn: (broker: Broker) => Promise<T>, opts: BrokerOptions = {}): Promise<T> {
  const broker = await startBroker(opts);
  try {
    return await fn(broker);
  } finally {
    await broker.stop();
  }
}

/**
 * An MQTT.js client connected to `url` (no automatic reconnect: a test's publisher should fail,
 * not hide a lost broker).
 * @example
 * const pub = await connectPublisher(broker.url);
 * await pub.publishAsync('csi/room1/esp32', line);
 * await pub.endAsync();
 */
export async function connectPublisher(url: string, opts: { username?: string; password?: string } = {}): Promise<MqttClient> {
  return mqtt.connectAsync(url, { reconnectPeriod: 0, clientId: `csipose-test-pub-${process.pid}-${Math.random().toString(16).slice(2)}`, ...opts });
}

/**
 * Polls `cond` every 10 ms until it holds; fails with `what()` after `giveUpMs` (a safety net so
 * a lost message fails the test instead of hanging it, not a measurement).
 * @example
 * await pollUntil(() => frames.length >= 13, () => `only ${frames.length} of 13 frames`);
 */
export async function pollUntil(cond: () => boolean, what: () => string, giveUpMs = 20_000): Promise<void> {
  const deadline = Date.now() + giveUpMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`gave up waiting: ${what()}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
