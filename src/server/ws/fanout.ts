import type uWS from 'uWebSockets.js';
import type { PoseAlert } from '../../pose/types.js';
import type { PoseFrameView } from '../../render/view.js';
import type { Form } from '../../render/frame.js';
import { renderAlert } from '../../render/events.js';
import type { Credentials } from '../../auth/authenticator.js';
import {
  alertMatches,
  environmentMatches,
  poseShape,
  ProtocolError,
  subscriptionId,
  type AlertFilters,
  type PoseFilters,
  type SubscribeRequest,
} from './protocol.js';
import type { FrameShape } from '../../render/view.js';

/** Largest backpressure (unsent bytes) a connection may build up; beyond it pose frames are dropped for it. */
export const MAX_BACKPRESSURE = 256 * 1024;
/** Close code and reason of a client too far behind (Centrifugo closes slow clients with 3008). */
export const SLOW_CLOSE_CODE = 4008;

/** The connection's state (uWebSockets.js user data). */
export interface Client {
  readonly id: string;
  readonly ip: string;
  /** `user:NAME` or `api_key:ID`: subscriptions are limited per account. */
  readonly account: string;
  readonly form: Form;
  /** What authenticated it, re-checked while it is open (a revoked or expired token closes it). */
  readonly credentials: Credentials;
  /** Its subscriptions by id. */
  readonly subs: Map<string, Held>;
  /** Alerts the socket could not take yet, oldest first. */
  readonly alertQueue: string[];
  /** When the socket last went over the backpressure limit (ms), 0 while it keeps up. */
  overSince: number;
  /** Pose frames dropped for it. */
  dropped: number;
  /** Set when it is being closed for being slow: why, and when to drop it if it never reads again. */
  closing: { reason: string; deadline: number } | undefined;
  closed: boolean;
}

export type Socket = uWS.WebSocket<Client>;

/**
 * The subscriptions of one pose filter set sharing an id: at most one per connection. The first
 * subscription of a connection to a filter set takes the slot whose id is the filter set's own id;
 * a second equal subscription on the same connection takes the next slot, with its own id.
 */
interface PoseSlot {
  readonly id: string;
  /** The connections that receive its messages, every one the same bytes (one held for being slow is not one). */
  readonly members: Set<Socket>;
}

interface AlertSlot {
  readonly id: string;
  readonly members: Set<Socket>;
}

/** A distinct pose filter set (channel, form, filters): rendered and serialised once per frame. */
interface PoseGroup {
  readonly channel: 'pose_updates';
  /** The filter set's id, which is also the id of its first slot. */
  readonly id: string;
  readonly shape: FrameShape;
  readonly filters: PoseFilters;
  readonly slots: Map<string, PoseSlot>;
}

interface AlertGroup {
  readonly channel: 'alerts';
  readonly id: string;
  readonly filters: AlertFilters;
  readonly slots: Map<string, AlertSlot>;
}

type Group = PoseGroup | AlertGroup;

/** A subscription held by a connection: its filter set and its slot. */
type Held = { readonly group: PoseGroup; readonly slot: PoseSlot } | { readonly group: AlertGroup; readonly slot: AlertSlot };

/** Live limits, read per call (configuration `streaming.*`). */
export interface FanoutLimits {
  maxSubscriptionsPerAccount: number;
  slowClientTimeoutMs: number;
  maxQueuedAlerts: number;
}

/** What the fan-out has done; reported in `/metrics` and `/health/detailed`. */
export interface FanoutStats {
  poseFrames: number;
  /** Messages serialised: one per pose frame and distinct pose filter set, one per alert and alert filter set. */
  serialised: number;
  posePublishes: number;
  alertsSent: number;
  /** Alerts held for a slow client and delivered once it caught up. */
  alertsDeliveredLate: number;
  /** Stale pose frames not sent to clients over the backpressure limit (latest wins). */
  poseFramesDropped: number;
  slowCloses: number;
  statusPushes: number;
}

const STATUS_TOPIC = 'status';
/** How a serialised pose_update and alert begin, up to the subscription id (JSON.stringify keeps key order). */
const POSE_PREFIX = '{"type":"pose_update","subscription_id":"';
const ALERT_PREFIX = '{"type":"alert","subscription_id":"';

/**
 * A message serialised for a filter set's first slot, re-addressed to another slot of it: the same
 * bytes with the other subscription id, without serialising the frame again.
 */
function readdress(text: string, prefix: string, from: string, to: string): string {
  return from === to ? text : prefix + to + text.slice(prefix.length + from.length);
}

/** `{"type":"pos` — the prefix of a pose_update, the one message kind that may be dropped. */
function isPoseUpdate(message: ArrayBuffer): boolean {
  const b = new Uint8Array(message, 0, Math.min(12, message.byteLength));
  // {"type":"pos
  return b.length === 12 && b[9] === 0x70 && b[10] === 0x6f && b[11] === 0x73;
}

const utf8 = new TextEncoder();

/**
 * A pose_update (UTF-8) to one socket. Over the backpressure limit uWS drops it and calls the
 * `dropped` handler ({@link Fanout.dropped}); a throw (a socket uWS has closed) stays here, so
 * that the other members still get the frame.
 */
function sendPose(ws: Socket, bytes: Uint8Array): void {
  try {
    ws.send(bytes, false, false);
  } catch {
    // Closed under us: its close handler takes it out of every slot.
  }
}

/**
 * The `/ws/pose` fan-out: subscribers with equal filters share one slot, so each pose frame is
 * filtered, serialised and encoded (UTF-8) once per distinct filter set, and the same bytes are
 * sent to every member, each send straight away (uWS frames and writes it in C++; no copy or
 * conversion per member). Alerts go to each member of each matching alert filter set, serialised
 * once per set; system status to every connection through one uWS topic.
 *
 * Every `subscribe` is a subscription of its own: a connection holding two with equal filters
 * gets each frame once per subscription, under each one's id, and unsubscribing one leaves the
 * other. Since every member of a slot receives the same bytes, each slot of a filter set (see
 * {@link PoseSlot}) has its own members; the frame is still serialised once per filter set and
 * only re-addressed for a second slot, which exists only while some connection holds equal
 * subscriptions twice.
 *
 * Slow clients never slow anyone else: uWS does not send to a socket over {@link MAX_BACKPRESSURE},
 * so its stale pose frames are dropped (counted through uWS's `dropped` callback) and it gets the
 * newest once it drains. Alerts are never dropped while the client stays connected:
 * one the socket cannot take waits in its queue and goes out on `drain`. A client that stays over
 * the limit for `slowClientTimeoutMs`, or whose alert queue overflows, is closed with 4008.
 */
export class Fanout {
  private readonly groups = new Map<string, Group>();
  private readonly perAccount = new Map<string, number>();
  /** Sockets over the backpressure limit. */
  private readonly slow = new Set<Socket>();
  /** Slow sockets being closed: each gets its close frame once it has room for it. */
  private readonly ending = new Set<Socket>();
  private readonly sockets = new Set<Socket>();
  readonly stats: FanoutStats = {
    poseFrames: 0,
    serialised: 0,
    posePublishes: 0,
    alertsSent: 0,
    alertsDeliveredLate: 0,
    poseFramesDropped: 0,
    slowCloses: 0,
    statusPushes: 0,
  };

  constructor(
    private readonly app: uWS.TemplatedApp,
    private readonly limits: () => FanoutLimits,
  ) {}

  /** A new connection: it receives the status pushes. */
  opened(ws: Socket): void {
    this.sockets.add(ws);
    ws.subscribe(STATUS_TOPIC);
  }

  /** A closed connection: its subscriptions end. */
  closed(ws: Socket): void {
    const c = ws.getUserData();
    c.closed = true;
    this.sockets.delete(ws);
    this.slow.delete(ws);
    this.ending.delete(ws);
    for (const id of [...c.subs.keys()]) this.leave(ws, c, id);
    c.alertQueue.length = 0;
  }

  /** Open connections. */
  get connections(): number {
    return this.sockets.size;
  }

  /** Every open connection (for closing them all). */
  all(): Socket[] {
    return [...this.sockets];
  }

  /**
   * Subscribes a connection. Every call is a new subscription with its own id (unique on the
   * connection) and counts against the account's limit. Subscriptions with equal filters in the
   * same form share a filter set; across connections they also share an id and a topic.
   * @returns the subscription id and the filters applied
   * @throws ProtocolError RATE_LIMIT_EXCEEDED past the account's subscription limit
   */
  subscribe(ws: Socket, r: SubscribeRequest): { id: string; filters: PoseFilters | AlertFilters } {
    const c = ws.getUserData();
    const limit = this.limits().maxSubscriptionsPerAccount;
    const held = this.perAccount.get(c.account) ?? 0;
    if (held >= limit) {
      throw new ProtocolError('RATE_LIMIT_EXCEEDED', `at most ${limit} concurrent subscriptions per account (this account holds ${held})`, {
        limit,
        current: held,
      });
    }
    const base = subscriptionId(r, c.form);
    // The first slot of this filter set that the connection does not hold yet.
    let id = base;
    for (let slot = 2; c.subs.has(id); slot++) id = subscriptionId(r, c.form, slot);
    let g = this.groups.get(base);
    if (!g) {
      g =
        r.channel === 'pose_updates'
          ? { channel: r.channel, id: base, shape: poseShape(r.filters, c.form), filters: r.filters, slots: new Map() }
          : { channel: r.channel, id: base, filters: r.filters, slots: new Map() };
      this.groups.set(base, g);
    }
    if (g.channel === 'pose_updates') {
      let slot = g.slots.get(id);
      if (!slot) g.slots.set(id, (slot = { id, members: new Set() }));
      slot.members.add(ws);
      c.subs.set(id, { group: g, slot });
    } else {
      let slot = g.slots.get(id);
      if (!slot) g.slots.set(id, (slot = { id, members: new Set() }));
      slot.members.add(ws);
      c.subs.set(id, { group: g, slot });
    }
    this.perAccount.set(c.account, held + 1);
    return { id, filters: r.filters };
  }

  /** @returns false when the connection holds no such subscription */
  unsubscribe(ws: Socket, id: string): boolean {
    const c = ws.getUserData();
    if (!c.subs.has(id)) return false;
    this.leave(ws, c, id);
    return true;
  }

  private leave(ws: Socket, c: Client, id: string): void {
    const h = c.subs.get(id)!;
    c.subs.delete(id);
    const held = (this.perAccount.get(c.account) ?? 1) - 1;
    if (held > 0) this.perAccount.set(c.account, held);
    else this.perAccount.delete(c.account);
    h.slot.members.delete(ws);
    if (h.slot.members.size === 0) {
      h.group.slots.delete(id);
      if (h.group.slots.size === 0) this.groups.delete(h.group.id);
    }
  }

  /** Subscriptions over every connection. */
  subscriptions(): number {
    let n = 0;
    for (const v of this.perAccount.values()) n += v;
    return n;
  }

  /** Distinct filter sets by channel. */
  filterSets(): { pose_updates: number; alerts: number } {
    let pose = 0;
    let alerts = 0;
    for (const g of this.groups.values())
      if (g.channel === 'pose_updates') pose++;
      else alerts++;
    return { pose_updates: pose, alerts };
  }

  /**
   * One pose frame to every pose filter set: filtered, serialised and encoded once per set (and
   * slot), then sent to each member at once, in the caller's turn of the event loop: a uWS topic
   * would walk its subscribers once to mark them and hold the message until the loop's check
   * phase before the first send.
   */
  pose(view: PoseFrameView): void {
    this.stats.poseFrames++;
    for (const g of this.groups.values()) {
      if (g.channel !== 'pose_updates' || !environmentMatches(view.frame.environmentId, g.filters)) continue;
      const text = view.json(g.shape, g.id, (frame) => {
        const { timestamp, ...data } = frame;
        return { type: 'pose_update', subscription_id: g.id, timestamp, data };
      });
      this.stats.serialised++;
      for (const slot of g.slots.values()) {
        // UTF-8 once: a string would be converted again for every socket.
        const bytes = utf8.encode(readdress(text, POSE_PREFIX, g.id, slot.id));
        for (const ws of slot.members) sendPose(ws, bytes);
        this.stats.posePublishes++;
      }
    }
  }

  /** One alert to every member of every matching alert filter set; held for sockets that cannot take it yet. */
  alert(a: PoseAlert): void {
    let body: Record<string, unknown> | undefined;
    for (const g of this.groups.values()) {
      if (g.channel !== 'alerts' || !alertMatches(a, g.filters)) continue;
      body ??= renderAlert(a);
      const text = JSON.stringify({ type: 'alert', subscription_id: g.id, ...body });
      this.stats.serialised++;
      for (const slot of g.slots.values()) {
        const msg = readdress(text, ALERT_PREFIX, g.id, slot.id);
        for (const ws of slot.members) this.sendAlert(ws, msg);
      }
    }
  }

  private sendAlert(ws: Socket, msg: string): void {
    const c = ws.getUserData();
    if (c.closed || c.closing) return;
    if (c.alertQueue.length === 0) {
      let status = 2;
      ws.cork(() => {
        status = ws.send(msg, false, false);
      });
      // 0: buffered (it will go), 1: sent, 2: dropped over the backpressure limit: keep it.
      if (status !== 2) {
        this.stats.alertsSent++;
        return;
      }
      this.markSlow(ws, c);
    }
    if (c.alertQueue.length >= this.limits().maxQueuedAlerts) {
      this.closeSlow(ws, `slow consumer: more than ${c.alertQueue.length} alerts waiting`);
      return;
    }
    c.alertQueue.push(msg);
  }

  /** The system status to every connection. */
  status(message: string): void {
    this.stats.statusPushes++;
    this.app.publish(STATUS_TOPIC, message, false, false);
  }

  /** uWS dropped a message for this socket (over the backpressure limit). */
  dropped(ws: Socket, message: ArrayBuffer): void {
    const c = ws.getUserData();
    if (isPoseUpdate(message)) {
      c.dropped++;
      this.stats.poseFramesDropped++;
    }
    this.markSlow(ws, c);
  }

  private markSlow(ws: Socket, c: Client): void {
    if (c.overSince === 0) c.overSince = Date.now();
    this.slow.add(ws);
  }

  /** The socket sent some of its backlog: deliver held alerts, and it keeps up again once under the limit. */
  drain(ws: Socket): void {
    const c = ws.getUserData();
    if (c.closed) return;
    if (c.closing) {
      this.end(ws, c);
      return;
    }
    while (c.alertQueue.length > 0 && ws.getBufferedAmount() < MAX_BACKPRESSURE) {
      if (ws.send(c.alertQueue[0]!, false, false) === 2) break;
      c.alertQueue.shift();
      this.stats.alertsSent++;
      this.stats.alertsDeliveredLate++;
    }
    if (c.alertQueue.length === 0 && ws.getBufferedAmount() < MAX_BACKPRESSURE) {
      c.overSince = 0;
      this.slow.delete(ws);
    }
  }

  /** Closes the clients that stayed over the limit too long (called every second). */
  sweep(now = Date.now()): void {
    for (const ws of [...this.ending]) {
      const c = ws.getUserData();
      if (c.closed) this.ending.delete(ws);
      // It never read again: no close frame can reach it, so drop the connection.
      else if (now >= c.closing!.deadline) ws.close();
    }
    if (this.slow.size === 0) return;
    const timeout = this.limits().slowClientTimeoutMs;
    for (const ws of [...this.slow]) {
      const c = ws.getUserData();
      if (c.closed) {
        this.slow.delete(ws);
        continue;
      }
      if (ws.getBufferedAmount() < MAX_BACKPRESSURE && c.alertQueue.length === 0) {
        c.overSince = 0;
        this.slow.delete(ws);
      } else if (now - c.overSince >= timeout) {
        this.closeSlow(ws, `slow consumer: over ${MAX_BACKPRESSURE} bytes unsent for ${Math.round((now - c.overSince) / 1000)} s`);
      }
    }
  }

  /**
   * Closes a slow client with 4008 and the reason. Its close frame must fit under the backpressure
   * limit (uWS drops it otherwise), so nothing more is sent to it: its topics end here and its
   * backlog can only shrink; the frame goes out on the first drain that makes room, and a client
   * that never reads again is dropped after the slow-client timeout.
   */
  private closeSlow(ws: Socket, reason: string): void {
    const c = ws.getUserData();
    if (c.closed || c.closing) return;
    this.stats.slowCloses++;
    this.slow.delete(ws);
    c.closing = { reason: reason.slice(0, 120), deadline: Date.now() + this.limits().slowClientTimeoutMs };
    c.alertQueue.length = 0;
    for (const h of c.subs.values()) if (h.group.channel === 'pose_updates') h.slot.members.delete(ws);
    ws.unsubscribe(STATUS_TOPIC);
    this.ending.add(ws);
    this.end(ws, c);
  }

  private end(ws: Socket, c: Client): void {
    if (ws.getBufferedAmount() < MAX_BACKPRESSURE) ws.end(SLOW_CLOSE_CODE, c.closing!.reason);
  }

  /** The largest backlog of any slow socket now, bytes (0 when every socket keeps up). */
  maxBuffered(): number {
    let m = 0;
    for (const set of [this.slow, this.ending]) for (const ws of set) if (!ws.getUserData().closed) m = Math.max(m, ws.getBufferedAmount());
    return m;
  }

  /** Connections over the limit now, and those being closed for it. */
  slowClients(): number {
    return this.slow.size + this.ending.size;
  }
}
