/**
 * The `/ws/pose` connection: subscribes to pose updates and alerts, keeps only the latest pose
 * frame (drawing happens once per animation frame, never per message), measures frames per second
 * and end-to-end latency, and reconnects by itself with backoff when the socket drops.
 *
 * Latency is the age of a frame when it arrives: now minus the frame's `timestamp` (the last CSI
 * frame behind the estimate), on the server's clock. The offset between the clocks comes from
 * `ping`s: offset = `server_time` - (sent + received) / 2, from the ping of this connection with
 * the shortest round trip (the least room for error).
 */
import type { AlertMessage, PoseFrame, StreamStatus } from './types.js';

export type StreamState = 'connecting' | 'live' | 'reconnecting' | 'stopped';

export interface StreamHooks {
  /** The credential for `?token=`, read at each (re)connect. */
  token(): string;
  onAlert(a: AlertMessage): void;
  onStatus(s: StreamStatus): void;
  onState(s: StreamState, retryInMs?: number): void;
  /**
   * Before reconnecting after the server closed for credentials (4401) or refused the upgrade:
   * checks them (renewing a token if need be); false stops reconnecting (the session is over).
   */
  checkCredentials(): Promise<boolean>;
}

/** Backoff: 0.5 s doubling to 15 s, each with +-25 % jitter so that clients do not come back in step. */
const FIRST_RETRY_MS = 500;
const MAX_RETRY_MS = 15_000;
/** Frames per second are counted over this window. */
const FPS_WINDOW_MS = 2000;
/** When the clock offset is measured after connecting (ms), then every minute. */
const FIRST_PINGS_MS = [0, 1000, 3000];
const PING_EVERY_MS = 60_000;
const AUTH_CLOSE = 4401;

export class PoseStream {
  /** The newest pose frame, replaced on each message. */
  latest: PoseFrame | undefined;
  /** Counts received frames: a drawer redraws when it changed. */
  seq = 0;
  /** performance.now() of the latest frame's arrival. */
  lastArrival = 0;
  state: StreamState = 'stopped';
  /** End-to-end latency, ms (smoothed), when measured. */
  latencyMs: number | undefined;
  private ws: WebSocket | undefined;
  /** The connection being replaced by {@link renew}, closed once the new one is up. */
  private retiring: WebSocket | undefined;
  private retryMs = FIRST_RETRY_MS;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  private pingTimers: Array<ReturnType<typeof setTimeout>> = [];
  private pingSent = 0;
  private clockOffset = 0;
  private bestRtt = Infinity;
  /** Arrival times of the last frames: enough for 256 frames/s over the window. */
  private readonly arrivals = new Float64Array(512);
  private arrivalCount = 0;

  constructor(private readonly hooks: StreamHooks) {}

  start(): void {
    if (this.state !== 'stopped') return;
    this.connect();
  }

  /**
   * Moves to a new connection with the current credential (after a token refresh, so that the
   * stream never runs on a superseded token), closing the old one once the new one is up.
   */
  renew(): void {
    if (this.state !== 'live' || !this.ws) return;
    this.stopPings();
    this.retiring = this.ws;
    this.connect(true);
  }

  stop(): void {
    this.retire();
    this.setState('stopped');
    clearTimeout(this.retryTimer);
    this.stopPings();
    const ws = this.ws;
    this.ws = undefined;
    ws?.close(1000, 'signed out');
  }

  /** Pose frames received per second over the last two seconds. */
  fps(now = performance.now()): number {
    const n = Math.min(this.arrivalCount, this.arrivals.length);
    let count = 0;
    let oldest = now;
    for (let i = 0; i < n; i++) {
      const t = this.arrivals[i]!;
      if (now - t <= FPS_WINDOW_MS) {
        count++;
        oldest = Math.min(oldest, t);
      }
    }
    return count < 2 ? 0 : ((count - 1) * 1000) / Math.max(1, now - oldest);
  }

  private setState(s: StreamState, retryInMs?: number): void {
    this.state = s;
    this.hooks.onState(s, retryInMs);
  }

  private retire(): void {
    this.retiring?.close(1000, 'renewed');
    this.retiring = undefined;
  }

  /** @param quiet a renewal: the stream stays live meanwhile */
  private connect(quiet = false): void {
    if (!quiet) this.setState(this.state === 'stopped' ? 'connecting' : 'reconnecting');
    const url = new URL('ws/pose', document.baseURI);
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    url.searchParams.set('token', this.hooks.token());
    url.searchParams.set('form', 'b');
    const ws = new WebSocket(url);
    this.ws = ws;
    let established = false;
    ws.onmessage = (ev) => {
      if (this.ws !== ws || typeof ev.data !== 'string') return;
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a message of the socket: each case below reads its own type's fields
      let m: any;
      try {
        m = JSON.parse(ev.data);
      } catch {
        return;
      }
      switch (m.type) {
        case 'pose_update':
          this.frame(m);
          break;
        case 'alert':
          this.hooks.onAlert(m as AlertMessage);
          break;
        case 'system_status':
          this.hooks.onStatus(m.status as StreamStatus);
          break;
        case 'pong':
          this.pong(String(m.server_time));
          break;
        case 'connection_established':
          established = true;
          this.retire();
          this.retryMs = FIRST_RETRY_MS;
          ws.send(JSON.stringify({ type: 'subscribe', channel: 'pose_updates', filters: { include_keypoints: true } }));
          ws.send(JSON.stringify({ type: 'subscribe', channel: 'alerts' }));
          this.stopPings();
          this.bestRtt = Infinity;
          this.pingTimers = [...FIRST_PINGS_MS.map((t) => setTimeout(() => this.ping(), t)), setInterval(() => this.ping(), PING_EVERY_MS)];
          this.setState('live');
          break;
        case 'error':
          console.warn('csipose stream:', m.code, m.message);
          break;
      }
    };
    ws.onclose = (ev) => {
      if (this.ws !== ws) return;
      this.retire();
      this.ws = undefined;
      this.stopPings();
      this.latest = undefined;
      void this.retry(ev.code === AUTH_CLOSE || !established);
    };
  }

  private async retry(checkCredentials: boolean): Promise<void> {
    if (this.state === 'stopped') return;
    const wait = this.retryMs * (0.75 + Math.random() * 0.5);
    this.retryMs = Math.min(MAX_RETRY_MS, this.retryMs * 2);
    this.setState('reconnecting', wait);
    if (checkCredentials && !(await this.hooks.checkCredentials().catch(() => true))) {
      this.stop();
      return;
    }
    // stop() may have run while the credentials were checked.
    if ((this.state as StreamState) === 'stopped') return;
    this.retryTimer = setTimeout(() => {
      if (this.state !== 'stopped') this.connect();
    }, wait);
  }

  private frame(m: { timestamp: string; data: Omit<PoseFrame, 'timestamp'> }): void {
    const now = performance.now();
    this.arrivals[this.arrivalCount++ % this.arrivals.length] = now;
    this.lastArrival = now;
    this.latest = { ...m.data, timestamp: m.timestamp };
    this.seq++;
    const age = Date.now() + this.clockOffset - Date.parse(m.timestamp);
    if (Number.isFinite(age)) this.latencyMs = this.latencyMs === undefined ? age : this.latencyMs + 0.1 * (age - this.latencyMs);
  }

  private stopPings(): void {
    for (const t of this.pingTimers) clearTimeout(t);
    this.pingTimers = [];
  }

  private ping(): void {
    if (this.ws?.readyState !== WebSocket.OPEN) return;
    this.pingSent = Date.now();
    this.ws.send(JSON.stringify({ type: 'ping' }));
  }

  private pong(serverTime: string): void {
    const t = Date.parse(serverTime);
    const now = Date.now();
    const rtt = now - this.pingSent;
    if (!Number.isFinite(t) || !this.pingSent || rtt > this.bestRtt) return;
    this.bestRtt = rtt;
    this.clockOffset = t - (this.pingSent + now) / 2;
  }
}
