import { join } from 'node:path';
import type { Subscription } from 'rxjs';
import type { ActivityEvent, PoseAlert } from '../pose/types.js';
import { renderAlert, renderEvent } from '../render/events.js';
import type { ConfigSnapshot } from '../config/store.js';
import type { ComponentReport, ConfigReader } from '../service/face.js';
import { ApiError } from '../errors.js';
import { attachOutlet, type Outlet, type OutletStreams } from './outlet.js';
import { alertMatches, eventMatches, type SubscribeRequest } from './subscriptions.js';
import { Outbox, type Delivery } from './webhook/outbox.js';
import { newDeliveryId, newEndpointId, Registry, type Endpoint } from './webhook/registry.js';
import { Sender, type AttemptResult } from './webhook/send.js';
import { newSecret, signatureHeader, SIGNATURE_HEADER } from './webhook/sign.js';
import { checkHost, readWebhookUrl, UrlRefused } from './webhook/ssrf.js';

export { readWebhookUrl, UrlRefused } from './webhook/ssrf.js';

/** The channels a webhook may subscribe to (pose frames go by WebSocket and MQTT: see docs/service.md "Webhooks"). */
export const WEBHOOK_CHANNELS = ['alerts', 'events'] as const;
/** How long the secret a rotation replaced still signs (a second `v1=`), so receivers can switch without losing requests. */
export const ROTATION_GRACE_MS = 24 * 3600 * 1000;
/** The rate limit's window: the spec counts events per hour. */
const HOUR_MS = 3600 * 1000;

/** A registration as asked for (validated by the route). */
export interface WebhookInput {
  url: string;
  description: string;
  enabled: boolean;
  subscriptions: SubscribeRequest[];
}

/** A registration as the API shows it (never the secret). */
export interface WebhookView {
  id: string;
  url: string;
  description: string;
  enabled: boolean;
  subscriptions: SubscribeRequest[];
  created_at: string;
  updated_at: string;
  /** Until when the secret before the last rotation still signs; null when none does. */
  previous_secret_expires_at: string | null;
  delivery: {
    pending: number;
    in_flight: number;
    dead_letters: number;
    /** Since the service started. */
    delivered: number;
    failed_attempts: number;
    dead_lettered: number;
    /** Attempts in the last hour, against `webhooks.rate_limit_per_hour`. */
    sent_last_hour: number;
    rate_limited: boolean;
    last_success_at: string | null;
    last_failure_at: string | null;
    last_error: string;
  };
}

/** A dead letter as the API shows it. */
export interface DeadLetterView {
  id: string;
  type: string;
  created_at: string;
  dead_at: string;
  reason: string;
  attempts: number;
  last_status: number;
  last_error: string;
  /** The body that was (to be) sent. */
  payload: unknown;
}

/** Where a page of dead letters ended: the last one's death time (epoch ms) and id. */
export type DeadLetterPosition = [number, string];

/** Which page of dead letters. */
export interface DeadLetterPage {
  limit: number;
  after?: DeadLetterPosition;
  offset?: number;
}

/** What the `/webhooks` routes use. Unknown ids give undefined (the route's 404). */
export interface WebhookCommands {
  list(): WebhookView[];
  get(id: string): WebhookView | undefined;
  /** @throws ApiError 422 for a refused url, 409 past `webhooks.max_endpoints` */
  create(input: WebhookInput): Promise<{ webhook: WebhookView; secret: string }>;
  update(id: string, patch: Partial<WebhookInput>): Promise<WebhookView | undefined>;
  remove(id: string): { pending: number; dead_letters: number } | undefined;
  rotateSecret(id: string): { webhook: WebhookView; secret: string; previous_secret_expires_at: string } | undefined;
  /** Queues a `ping` delivery. @throws ApiError 409 while the webhook is disabled */
  ping(id: string): { delivery_id: string } | undefined;
  /**
   * A page of the dead letters, newest first (by the time they died, then id): those after
   * `after` (a page's last `[dead_at ms, id]`), or from `offset`, at most `limit`.
   */
  deadLetters(id: string, page: DeadLetterPage): { dead_letters: DeadLetterView[]; total: number; last: DeadLetterPosition | null } | undefined;
  /** Back into the queue, attempts from 0: every dead letter, or those of `ids` (unknown ids listed). */
  redrive(id: string, ids?: readonly string[]): { redriven: string[]; unknown: string[] } | undefined;
  clearDeadLetters(id: string, ids?: readonly string[]): { cleared: string[]; unknown: string[] } | undefined;
}

/** Per endpoint, in memory: its queue, its dead letters and its figures since the start. */
interface Lane {
  readonly pending: Map<string, Delivery>;
  readonly dead: Map<string, Delivery>;
  /** Epoch ms of each attempt in the last hour, oldest first. */
  readonly sent: number[];
  /** Ids of the deliveries being attempted now. */
  readonly busy: Set<string>;
  delivered: number;
  failed: number;
  deadLettered: number;
  rateLimited: boolean;
  lastSuccessAt: number;
  lastFailureAt: number;
  lastError: string;
}

const iso = (ms: number) => new Date(ms).toISOString();

function lane(): Lane {
  return {
    pending: new Map(),
    dead: new Map(),
    sent: [],
    busy: new Set(),
    delivered: 0,
    failed: 0,
    deadLettered: 0,
    rateLimited: false,
    lastSuccessAt: 0,
    lastFailureAt: 0,
    lastError: '',
  };
}

/**
 * The webhooks outlet (docs/service.md "Webhooks"): the service's alerts and activity events,
 * each POSTed as signed JSON to every registered endpoint whose subscriptions it passes (the
 * filters of the `/ws/pose` protocol, src/outlets/subscriptions.ts).
 *
 * Every delivery goes through the outbox (src/outlets/webhook/outbox.ts) before its first attempt
 * and leaves it only once its endpoint answered 2xx, so it survives a restart or a crash
 * (at-least-once; the body's `id` lets receivers drop a repeat). A failed attempt is tried again
 * after a backoff that doubles from `webhooks.initial_backoff_seconds` up to
 * `max_backoff_seconds`; after `max_attempts` the delivery becomes a dead letter, which an admin
 * can list, re-drive or clear. At most `rate_limit_per_hour` attempts go to one endpoint in any
 * rolling hour; past it deliveries wait in the queue. Requests go only to registered URLs, never
 * follow redirects, and reach only public addresses unless `allow_private_networks`
 * (src/outlets/webhook/ssrf.ts). It reports itself as `webhooks` in `/health/detailed`.
 */
export class WebhookOutlet implements Outlet, WebhookCommands {
  readonly name = 'webhooks';
  private registry: Registry | undefined;
  private outbox: Outbox | undefined;
  private readonly sender: Sender;
  private readonly lanes = new Map<string, Lane>();
  private readonly subs: Subscription[] = [];
  private unreport: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  private pumpQueued = false;
  private closed = false;
  private deadDropped = 0;

  /**
   * @param config the configuration (`webhooks.*`), read-only
   * @param dataDir where `webhooks/endpoints.json` and `webhooks/outbox.jsonl` live
   * @param version the service's version (the `User-Agent`)
   * @param log the service's logger
   */
  constructor(
    private readonly config: ConfigReader,
    private readonly dataDir: string,
    private readonly version: string,
    private readonly log: (level: 'info' | 'warn' | 'error', msg: string) => void,
  ) {
    this.sender = new Sender(() => this.settings().allow_private_networks);
  }

  private settings(): ConfigSnapshot['webhooks'] {
    return this.config.get().webhooks;
  }

  /** Loads the registrations and the outbox, subscribes to alerts and events, and sends what waited. */
  start(streams: OutletStreams): void {
    const dir = join(this.dataDir, 'webhooks');
    this.registry = new Registry(join(dir, 'endpoints.json'));
    this.outbox = Outbox.open(join(dir, 'outbox.jsonl'));
    if (this.outbox.skipped) this.log('warn', `webhooks: ${this.outbox.skipped} unreadable line(s) of the outbox skipped (a write cut short)`);
    for (const e of this.registry.all()) this.lanes.set(e.id, lane());
    for (const d of this.outbox.deliveries()) {
      const l = this.lanes.get(d.webhookId);
      if (!l) {
        this.outbox.remove(d.id); // its endpoint was deleted
        continue;
      }
      (d.state === 'dead' ? l.dead : l.pending).set(d.id, d);
    }
    const fail = (what: string) => (e: unknown) => this.log('error', `webhooks ${what}: ${(e as Error)?.stack ?? String(e)}`);
    this.subs.push(
      attachOutlet(streams.alerts$, (a) => this.alert(a), fail('alert')),
      attachOutlet(streams.events$, (e) => this.event(e), fail('event')),
      // Limits change live: a larger rate or in-flight limit may let waiting deliveries go.
      attachOutlet(this.config.changes$, () => this.schedulePump(), fail('config')),
    );
    this.unreport = streams.report('webhooks', () => this.report());
    const waiting = [...this.lanes.values()].reduce((n, l) => n + l.pending.size, 0);
    if (waiting) this.log('info', `webhooks: ${waiting} pending deliveries from before the restart`);
    this.schedulePump();
  }

  // ---- events in -----------------------------------------------------------------------------

  private alert(a: PoseAlert): void {
    let data: Record<string, unknown> | undefined;
    for (const ep of this.endpoints())
      if (ep.enabled && ep.subscriptions.some((s) => s.channel === 'alerts' && alertMatches(a, s.filters)))
        this.enqueue(ep, 'alert', (data ??= renderAlert(a)));
  }

  private event(e: ActivityEvent): void {
    let data: Record<string, unknown> | undefined;
    for (const ep of this.endpoints())
      if (ep.enabled && ep.subscriptions.some((s) => s.channel === 'events' && eventMatches(e, s.filters)))
        this.enqueue(ep, 'event', (data ??= renderEvent(e)));
  }

  private endpoints(): Endpoint[] {
    return this.registry?.all() ?? [];
  }

  /** Queues one delivery (journaled before anything is sent). */
  private enqueue(ep: Endpoint, type: string, data: unknown): Delivery {
    const now = Date.now();
    const id = newDeliveryId();
    const body = JSON.stringify({ id, type, webhook_id: ep.id, created_at: iso(now), data });
    const d: Delivery = {
      id,
      webhookId: ep.id,
      type,
      body,
      createdAt: now,
      attempts: 0,
      nextAt: now,
      state: 'pending',
      lastStatus: 0,
      lastError: '',
      deadAt: 0,
      deadReason: '',
    };
    const l = this.laneOf(ep.id);
    const max = this.settings().max_pending_per_endpoint;
    if (l.pending.size >= max) {
      d.lastError = `${max} deliveries were already waiting for this endpoint (webhooks.max_pending_per_endpoint)`;
      this.bury(l, d, 'queue_full');
      return d;
    }
    this.outbox!.put(d);
    l.pending.set(id, d);
    this.schedulePump();
    return d;
  }

  private laneOf(id: string): Lane {
    let l = this.lanes.get(id);
    if (!l) this.lanes.set(id, (l = lane()));
    return l;
  }

  /** Makes a delivery a dead letter; the oldest past `max_dead_letters_per_endpoint` goes. */
  private bury(l: Lane, d: Delivery, reason: string): void {
    d.state = 'dead';
    d.deadAt = Date.now();
    d.deadReason = reason;
    l.pending.delete(d.id);
    l.dead.set(d.id, d);
    l.deadLettered++;
    this.outbox!.put(d);
    const max = this.settings().max_dead_letters_per_endpoint;
    for (const old of l.dead.keys()) {
      if (l.dead.size <= max) break;
      l.dead.delete(old);
      this.outbox!.remove(old);
      this.deadDropped++;
    }
  }

  // ---- sending -------------------------------------------------------------------------------

  /** Pumps once the current callback is done (never inside the pipeline's emission). */
  private schedulePump(): void {
    if (this.pumpQueued || this.closed) return;
    this.pumpQueued = true;
    setImmediate(() => {
      this.pumpQueued = false;
      this.pump();
    });
  }

  /** Starts every attempt that is due and allowed, and sets the timer for the next one. */
  private pump(): void {
    if (this.closed || !this.registry) return;
    const s = this.settings();
    const now = Date.now();
    let wake = Infinity;
    for (const ep of this.registry.all()) {
      const l = this.laneOf(ep.id);
      while (l.sent.length && l.sent[0]! <= now - HOUR_MS) l.sent.shift();
      l.rateLimited = false;
      if (!ep.enabled) continue;
      for (const d of l.pending.values()) {
        if (l.busy.size >= s.max_in_flight_per_endpoint) break;
        if (l.busy.has(d.id)) continue;
        if (d.nextAt > now) {
          wake = Math.min(wake, d.nextAt);
          continue;
        }
        if (l.sent.length >= s.rate_limit_per_hour) {
          l.rateLimited = true;
          wake = Math.min(wake, l.sent[0]! + HOUR_MS);
          break;
        }
        this.attempt(ep, l, d).catch((e: unknown) => this.log('error', `webhooks ${ep.id}: ${(e as Error)?.stack ?? String(e)}`));
      }
    }
    this.wakeAt(wake);
  }

  private wakeAt(at: number): void {
    if (at === this.timerAt) return;
    clearTimeout(this.timer);
    this.timerAt = at;
    if (!Number.isFinite(at)) return;
    this.timer = setTimeout(
      () => {
        this.timerAt = Infinity;
        this.pump();
      },
      Math.max(0, Math.min(at - Date.now(), 2 ** 31 - 1)),
    );
    this.timer.unref();
  }

  private async attempt(ep: Endpoint, l: Lane, d: Delivery): Promise<void> {
    const s = this.settings();
    const now = Date.now();
    const attempt = d.attempts + 1;
    l.busy.add(d.id);
    l.sent.push(now);
    const t = Math.floor(now / 1000);
    const secrets = ep.previousSecret && ep.previousUntil > now ? [ep.secret, ep.previousSecret] : [ep.secret];
    const sent = this.sender.send({
      url: ep.url,
      body: d.body,
      timeoutMs: s.timeout_seconds * 1000,
      headers: {
        'Content-Type': 'application/json',
        'User-Agent': `csipose-webhooks/${this.version}`,
        'X-Csipose-Delivery': d.id,
        'X-Csipose-Event-Type': d.type,
        'X-Csipose-Webhook-Id': ep.id,
        'X-Csipose-Attempt': String(attempt),
        [SIGNATURE_HEADER]: signatureHeader(secrets, t, d.body),
      },
    });
    // The sender never rejects; a throw of its own (a header Node refuses) is a failed attempt all the same.
    const r = await sent.catch((e: unknown): AttemptResult => ({ ok: false, status: 0, error: String((e as Error)?.message ?? e) }));
    d.attempts = attempt;
    l.busy.delete(d.id);
    // Closed meanwhile: the delivery stays in the outbox as it was, and goes after the restart.
    if (this.closed) return;
    // Deleted or cleared meanwhile: nothing to write.
    if (l.pending.get(d.id) !== d || this.lanes.get(ep.id) !== l) return this.schedulePump();
    const done = Date.now();
    d.lastStatus = r.status;
    if (r.ok) {
      l.pending.delete(d.id);
      this.outbox!.remove(d.id);
      l.delivered++;
      l.lastSuccessAt = done;
    } else {
      l.failed++;
      l.lastFailureAt = done;
      l.lastError = d.lastError = r.error;
      if (attempt >= s.max_attempts) this.bury(l, d, 'max_attempts');
      else {
        d.nextAt = done + this.backoffMs(attempt, r.retryAfterS);
        this.outbox!.put(d);
      }
    }
    this.schedulePump();
  }

  /** The wait after attempt `n` failed: doubling from the initial backoff, capped, +-20 % at random. */
  private backoffMs(n: number, retryAfterS: number | undefined): number {
    const s = this.settings();
    const max = s.max_backoff_seconds * 1000;
    const base = Math.min(max, s.initial_backoff_seconds * 1000 * 2 ** (n - 1));
    const jittered = base * (0.8 + 0.4 * Math.random());
    return Math.min(max, Math.max(jittered, (retryAfterS ?? 0) * 1000));
  }

  // ---- commands (the /webhooks routes) --------------------------------------------------------

  private view(e: Endpoint): WebhookView {
    const l = this.laneOf(e.id);
    const now = Date.now();
    return {
      id: e.id,
      url: e.url,
      description: e.description,
      enabled: e.enabled,
      subscriptions: e.subscriptions,
      created_at: iso(e.createdAt),
      updated_at: iso(e.updatedAt),
      previous_secret_expires_at: e.previousSecret && e.previousUntil > now ? iso(e.previousUntil) : null,
      delivery: {
        pending: l.pending.size,
        in_flight: l.busy.size,
        dead_letters: l.dead.size,
        delivered: l.delivered,
        failed_attempts: l.failed,
        dead_lettered: l.deadLettered,
        sent_last_hour: l.sent.filter((t) => t > now - HOUR_MS).length,
        rate_limited: l.rateLimited,
        last_success_at: l.lastSuccessAt ? iso(l.lastSuccessAt) : null,
        last_failure_at: l.lastFailureAt ? iso(l.lastFailureAt) : null,
        last_error: l.lastError,
      },
    };
  }

  private endpoint(id: string): Endpoint | undefined {
    return this.registry?.get(id);
  }

  /** Refuses a URL whose host is (or resolves to) an address webhooks may not reach. */
  private async checkUrl(url: string): Promise<void> {
    try {
      await checkHost(readWebhookUrl(url), this.sender.addresses, this.settings().allow_private_networks);
    } catch (e) {
      if (e instanceof UrlRefused) throw ApiError.fields([{ field: 'url', message: e.message, received_value: url }]);
      throw e;
    }
  }

  list(): WebhookView[] {
    return this.endpoints().map((e) => this.view(e));
  }

  get(id: string): WebhookView | undefined {
    const e = this.endpoint(id);
    return e && this.view(e);
  }

  async create(input: WebhookInput): Promise<{ webhook: WebhookView; secret: string }> {
    const max = this.settings().max_endpoints;
    if (this.registry!.size >= max)
      throw new ApiError('SYSTEM_STATE_CONFLICT', `at most ${max} webhooks may be registered (webhooks.max_endpoints); delete one first`, {
        max_endpoints: max,
      });
    await this.checkUrl(input.url);
    const now = Date.now();
    const e: Endpoint = { id: newEndpointId(), ...input, secret: newSecret(), previousSecret: null, previousUntil: 0, createdAt: now, updatedAt: now };
    this.registry!.save(e);
    this.lanes.set(e.id, lane());
    return { webhook: this.view(e), secret: e.secret };
  }

  async update(id: string, patch: Partial<WebhookInput>): Promise<WebhookView | undefined> {
    if (!this.endpoint(id)) return undefined;
    if (patch.url !== undefined) await this.checkUrl(patch.url);
    // Read again after the await: it may have been deleted meanwhile.
    const e = this.endpoint(id);
    if (!e) return undefined;
    const next: Endpoint = { ...e, ...patch, updatedAt: Date.now() };
    this.registry!.save(next);
    this.schedulePump();
    return this.view(next);
  }

  remove(id: string): { pending: number; dead_letters: number } | undefined {
    if (!this.registry!.remove(id)) return undefined;
    const l = this.lanes.get(id);
    this.lanes.delete(id);
    if (!l) return { pending: 0, dead_letters: 0 };
    for (const d of [...l.pending.keys(), ...l.dead.keys()]) this.outbox!.remove(d);
    return { pending: l.pending.size, dead_letters: l.dead.size };
  }

  rotateSecret(id: string): { webhook: WebhookView; secret: string; previous_secret_expires_at: string } | undefined {
    const e = this.endpoint(id);
    if (!e) return undefined;
    const now = Date.now();
    const next: Endpoint = { ...e, secret: newSecret(), previousSecret: e.secret, previousUntil: now + ROTATION_GRACE_MS, updatedAt: now };
    this.registry!.save(next);
    return { webhook: this.view(next), secret: next.secret, previous_secret_expires_at: iso(next.previousUntil) };
  }

  ping(id: string): { delivery_id: string } | undefined {
    const e = this.endpoint(id);
    if (!e) return undefined;
    if (!e.enabled) throw new ApiError('SYSTEM_STATE_CONFLICT', `webhook ${id} is disabled: enable it first`, { webhook_id: id, enabled: false });
    const d = this.enqueue(e, 'ping', { message: 'ping from csipose', webhook_id: id });
    return { delivery_id: d.id };
  }

  deadLetters(id: string, page: DeadLetterPage): { dead_letters: DeadLetterView[]; total: number; last: DeadLetterPosition | null } | undefined {
    if (!this.endpoint(id)) return undefined;
    const all = [...this.laneOf(id).dead.values()].sort((x, y) => y.deadAt - x.deadAt || (y.id < x.id ? -1 : y.id > x.id ? 1 : 0));
    let from = page.offset ?? 0;
    if (page.after) {
      const [at, after] = page.after;
      from = all.findIndex((d) => d.deadAt < at || (d.deadAt === at && d.id < after));
      if (from < 0) from = all.length;
    }
    const slice = all.slice(from, from + page.limit);
    const lastOne = slice.at(-1);
    return {
      dead_letters: slice.map((d) => ({
        id: d.id,
        type: d.type,
        created_at: iso(d.createdAt),
        dead_at: iso(d.deadAt),
        reason: d.deadReason,
        attempts: d.attempts,
        last_status: d.lastStatus,
        last_error: d.lastError,
        payload: JSON.parse(d.body) as unknown,
      })),
      total: all.length,
      last: lastOne && from + slice.length < all.length ? [lastOne.deadAt, lastOne.id] : null,
    };
  }

  /** The dead letters of `ids` (every one when absent), and the ids that are not dead letters of it. */
  private pick(l: Lane, ids: readonly string[] | undefined): { found: Delivery[]; unknown: string[] } {
    if (!ids) return { found: [...l.dead.values()], unknown: [] };
    const found: Delivery[] = [];
    const unknown: string[] = [];
    for (const id of new Set(ids)) {
      const d = l.dead.get(id);
      if (d) found.push(d);
      else unknown.push(id);
    }
    return { found, unknown };
  }

  redrive(id: string, ids?: readonly string[]): { redriven: string[]; unknown: string[] } | undefined {
    if (!this.endpoint(id)) return undefined;
    const l = this.laneOf(id);
    const { found, unknown } = this.pick(l, ids);
    const now = Date.now();
    for (const d of found) {
      l.dead.delete(d.id);
      Object.assign(d, { state: 'pending', attempts: 0, nextAt: now, deadAt: 0, deadReason: '' });
      l.pending.set(d.id, d);
      this.outbox!.put(d);
    }
    this.schedulePump();
    return { redriven: found.map((d) => d.id), unknown };
  }

  clearDeadLetters(id: string, ids?: readonly string[]): { cleared: string[]; unknown: string[] } | undefined {
    if (!this.endpoint(id)) return undefined;
    const l = this.laneOf(id);
    const { found, unknown } = this.pick(l, ids);
    for (const d of found) {
      l.dead.delete(d.id);
      this.outbox!.remove(d.id);
    }
    return { cleared: found.map((d) => d.id), unknown };
  }

  // ---- status --------------------------------------------------------------------------------

  /** The `webhooks` component of `/health/detailed` and `/metrics`. */
  report(): ComponentReport {
    const eps = this.endpoints();
    let queue = 0;
    let inFlight = 0;
    let delivered = 0;
    let failed = 0;
    let deadLettered = 0;
    let deadLetters = 0;
    let rateLimited = 0;
    let failing = 0;
    for (const e of eps) {
      const l = this.laneOf(e.id);
      queue += l.pending.size;
      inFlight += l.busy.size;
      delivered += l.delivered;
      failed += l.failed;
      deadLettered += l.deadLettered;
      deadLetters += l.dead.size;
      if (l.rateLimited) rateLimited++;
      if (e.enabled && l.lastFailureAt > l.lastSuccessAt) failing++;
    }
    return {
      // `failing`: an enabled endpoint's last attempt failed; the service itself is not degraded by it.
      status: eps.length === 0 ? 'idle' : failing ? 'failing' : 'active',
      endpoints: eps.length,
      enabled_endpoints: eps.filter((e) => e.enabled).length,
      queue_depth: queue,
      in_flight: inFlight,
      delivered,
      failed,
      dead_lettered: deadLettered,
      dead_letters: deadLetters,
      dead_letters_dropped: this.deadDropped,
      rate_limited_endpoints: rateLimited,
      failing_endpoints: failing,
    };
  }

  /** Stops sending; what is pending stays in the outbox for the next start. */
  close(): void {
    this.closed = true;
    for (const s of this.subs) s.unsubscribe();
    this.subs.length = 0;
    this.unreport?.();
    this.unreport = undefined;
    clearTimeout(this.timer);
    this.sender.close();
    this.outbox?.close();
  }
}
