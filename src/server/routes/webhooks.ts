import { ApiError, type FieldError } from '../../errors.js';
import type { Ctx, Reply, Route } from '../core.js';
import { decodeQueryCursor, encodeQueryCursor } from '../cursor.js';
import { otherFormPaging } from './analytics.js';
import { Checker } from '../validate.js';
import { ProtocolError, readSubscription, type SubscribeRequest } from '../../outlets/subscriptions.js';
import { readWebhookUrl, UrlRefused, WEBHOOK_CHANNELS, type DeadLetterPosition, type WebhookCommands, type WebhookInput } from '../../outlets/webhooks.js';

/** What `/webhooks` uses: the webhooks outlet's commands. */
export interface WebhookRoutesFace {
  readonly webhooks: WebhookCommands;
}

/** Subscriptions one webhook may hold. */
const MAX_SUBSCRIPTIONS = 10;
/** Ids one redrive or clear may name. */
const MAX_IDS = 1000;
const FIELDS = ['url', 'description', 'enabled', 'subscriptions'] as const;
/** Page sizes of the dead-letter listing, as the other listings' (docs/service.md "Paging"). */
const DEAD_LETTERS_LIMIT_A = { default: 100, max: 1000 } as const;
const DEAD_LETTERS_PER_PAGE_B = { default: 50, max: 1000 } as const;

/**
 * `subscriptions`: 1-10 of `{channel, filters}`, each read by the subscription reader of
 * `/ws/pose` (src/outlets/subscriptions.ts) with the webhook channels.
 */
function readSubscriptions(v: unknown, errors: FieldError[]): SubscribeRequest[] | undefined {
  if (!Array.isArray(v) || v.length === 0 || v.length > MAX_SUBSCRIPTIONS) {
    errors.push({
      field: 'subscriptions',
      message: `subscriptions must be an array of 1 to ${MAX_SUBSCRIPTIONS} {channel, filters} (channels: ${WEBHOOK_CHANNELS.join(', ')})`,
      received_value: v ?? null,
    });
    return undefined;
  }
  const out: SubscribeRequest[] = [];
  v.forEach((s: unknown, i) => {
    const at = `subscriptions[${i}]`;
    if (s === null || typeof s !== 'object' || Array.isArray(s)) {
      errors.push({ field: at, message: `${at} must be an object {channel, filters}`, received_value: s ?? null });
      return;
    }
    const o = s as Record<string, unknown>;
    const unknown = Object.keys(o).filter((k) => k !== 'channel' && k !== 'filters');
    for (const k of unknown) errors.push({ field: `${at}.${k}`, message: `unknown field ${at}.${k} (known: channel, filters)`, received_value: o[k] });
    if (o.channel === 'pose_updates') {
      errors.push({
        field: `${at}.channel`,
        message: `${at}.channel pose_updates is not served by webhooks: a pose stream (10 or more frames a second) would pass the 10,000 events per hour of an endpoint within the hour; take it over /ws/pose or MQTT`,
        received_value: o.channel,
      });
      return;
    }
    try {
      out.push(readSubscription(o.channel, o.filters, WEBHOOK_CHANNELS, at));
    } catch (e) {
      if (!(e instanceof ProtocolError)) throw e;
      errors.push({ field: String(e.details.field), message: e.message, received_value: e.details.received_value });
    }
  });
  return out;
}

/**
 * A webhook's fields from a body: all of `url` and `subscriptions` on create (`description`
 * '' and `enabled` true by default), any subset on update. 422 listing every bad field.
 */
function readInput(ctx: Ctx, create: boolean): Partial<WebhookInput> {
  const c = new Checker();
  const b = c.object(ctx.body, 'body', true);
  c.done();
  const url = c.string(b!.url, 'url', 2048, create);
  if (url !== undefined) {
    try {
      readWebhookUrl(url);
    } catch (e) {
      if (!(e instanceof UrlRefused)) throw e;
      c.errors.push({ field: 'url', message: e.message, received_value: url });
    }
  }
  const description = c.string(b!.description, 'description', 200);
  const enabled = c.bool(b!.enabled, 'enabled');
  c.only(b, '', FIELDS);
  let subscriptions: SubscribeRequest[] | undefined;
  if (b!.subscriptions !== undefined || create) subscriptions = readSubscriptions(b!.subscriptions, c.errors);
  if (!create && Object.keys(b!).length === 0)
    c.errors.push({ field: 'body', message: `name at least one field to change (${FIELDS.join(', ')})`, received_value: b });
  c.done();
  if (create) return { url: url!, description: description ?? '', enabled: enabled ?? true, subscriptions: subscriptions! };
  return {
    ...(url !== undefined ? { url } : {}),
    ...(description !== undefined ? { description } : {}),
    ...(enabled !== undefined ? { enabled } : {}),
    ...(subscriptions !== undefined ? { subscriptions } : {}),
  };
}

/** `ids` of a redrive or clear body: absent (every dead letter) or 1-1000 delivery ids. */
function readIds(ctx: Ctx): string[] | undefined {
  if (ctx.body === undefined) return undefined;
  const c = new Checker();
  const b = c.object(ctx.body, 'body', false);
  c.only(b, '', ['ids']);
  const ids = b?.ids;
  if (ids !== undefined && (!Array.isArray(ids) || ids.length === 0 || ids.length > MAX_IDS || ids.some((x) => typeof x !== 'string' || x.length > 64)))
    c.errors.push({ field: 'ids', message: `ids must be an array of 1 to ${MAX_IDS} delivery ids (omit it for every dead letter)`, received_value: ids });
  c.done();
  return ids as string[] | undefined;
}

/** A Form A position in a dead-letter listing: the last one's death time (epoch ms) and id. */
const isPosition = (v: unknown): v is DeadLetterPosition =>
  Array.isArray(v) && v.length === 2 && Number.isSafeInteger(v[0]) && typeof v[1] === 'string' && v[1].length <= 64;

/**
 * `GET /webhooks/{id}/dead-letters`, newest first, paged as every listing is (docs/service.md
 * "Conventions"): Form A by `limit` and `cursor` (a position, so clearing or re-driving between
 * pages never repeats or skips one), Form B by `page` and `per_page`.
 */
function deadLetterPage(svc: WebhookRoutesFace, ctx: Ctx, webhookId: string): Reply {
  const c = new Checker();
  const formA = ctx.form === 'a';
  c.onlyQuery(ctx.query, ['limit', 'cursor', 'page', 'per_page']);
  otherFormPaging(c, ctx.query, formA ? 'a' : 'b');
  if (formA) {
    const sentLimit = c.queryInt(ctx.query, 'limit', 1, DEAD_LETTERS_LIMIT_A.max);
    let limit = sentLimit ?? DEAD_LETTERS_LIMIT_A.default;
    let after: DeadLetterPosition | undefined;
    const raw = ctx.query.get('cursor');
    if (raw !== null) {
      const cursor = decodeQueryCursor(raw, {}, isPosition, DEAD_LETTERS_LIMIT_A.max);
      if (!cursor)
        c.errors.push({ field: 'cursor', message: 'cursor must be a next_cursor of an earlier page of this listing', received_value: raw.slice(0, 64) });
      else {
        after = cursor.at;
        limit = sentLimit ?? cursor.limit;
      }
    }
    c.done();
    const r = found(svc.webhooks.deadLetters(webhookId, { limit, ...(after ? { after } : {}) }), webhookId);
    return {
      data: {
        webhook_id: webhookId,
        dead_letters: r.dead_letters,
        pagination: {
          limit,
          returned_count: r.dead_letters.length,
          total_count: r.total,
          has_more: r.last !== null,
          next_cursor: r.last ? encodeQueryCursor(r.last, {}, limit) : null,
        },
      },
    };
  }
  const page = c.queryInt(ctx.query, 'page', 1, 2 ** 31 - 1) ?? 1;
  const perPage = c.queryInt(ctx.query, 'per_page', 1, DEAD_LETTERS_PER_PAGE_B.max) ?? DEAD_LETTERS_PER_PAGE_B.default;
  c.done();
  const r = found(svc.webhooks.deadLetters(webhookId, { limit: perPage, offset: (page - 1) * perPage }), webhookId);
  const totalPages = Math.ceil(r.total / perPage);
  return {
    data: r.dead_letters,
    extra: { pagination: { page, per_page: perPage, total: r.total, total_pages: totalPages, has_next: page < totalPages, has_prev: page > 1 } },
  };
}

function notFound(id: string): never {
  throw new ApiError('RESOURCE_NOT_FOUND', `no webhook ${id}`, { webhook_id: id });
}

function found<T>(v: T | undefined, id: string): T {
  if (v === undefined) notFound(id);
  return v;
}

/**
 * The webhooks API (docs/service.md "Webhooks"), admin only: register, list, read, change,
 * delete, rotate the secret, send a ping, and read, re-drive or clear the dead letters. The
 * secret is shown once, in the answers of create and rotate-secret.
 */
export function webhookRoutes(svc: WebhookRoutesFace): Route[] {
  const route = (method: Route['method'], pattern: string, handler: Route['handler']): Route => ({
    method,
    pattern,
    category: 'configuration',
    role: 'admin',
    handler,
  });
  const id = (ctx: Ctx) => ctx.params.webhook_id!;
  return [
    route('GET', '/webhooks', () => {
      const webhooks = svc.webhooks.list();
      return { data: { webhooks, total: webhooks.length } };
    }),
    route('POST', '/webhooks', async (ctx) => {
      const { webhook, secret } = await svc.webhooks.create(readInput(ctx, true) as WebhookInput);
      return { status: 201, data: { ...webhook, secret } };
    }),
    route('GET', '/webhooks/:webhook_id', (ctx) => ({ data: found(svc.webhooks.get(id(ctx)), id(ctx)) })),
    route('PUT', '/webhooks/:webhook_id', async (ctx) => {
      if (!svc.webhooks.get(id(ctx))) notFound(id(ctx));
      return { data: found(await svc.webhooks.update(id(ctx), readInput(ctx, false)), id(ctx)) };
    }),
    route('DELETE', '/webhooks/:webhook_id', (ctx) => {
      const r = found(svc.webhooks.remove(id(ctx)), id(ctx));
      return { data: { id: id(ctx), deleted: true, pending_dropped: r.pending, dead_letters_dropped: r.dead_letters } };
    }),
    route('POST', '/webhooks/:webhook_id/rotate-secret', (ctx) => {
      const r = found(svc.webhooks.rotateSecret(id(ctx)), id(ctx));
      return { data: { ...r.webhook, secret: r.secret } };
    }),
    route('POST', '/webhooks/:webhook_id/ping', (ctx) => ({ status: 202, data: found(svc.webhooks.ping(id(ctx)), id(ctx)) })),
    route('GET', '/webhooks/:webhook_id/dead-letters', (ctx) => deadLetterPage(svc, ctx, id(ctx))),
    route('POST', '/webhooks/:webhook_id/dead-letters/redrive', (ctx) => {
      const ids = readIds(ctx);
      return { data: found(svc.webhooks.redrive(id(ctx), ids), id(ctx)) };
    }),
    route('DELETE', '/webhooks/:webhook_id/dead-letters', (ctx) => ({ data: found(svc.webhooks.clearDeadLetters(id(ctx)), id(ctx)) })),
    route('DELETE', '/webhooks/:webhook_id/dead-letters/:delivery_id', (ctx) => {
      const r = found(svc.webhooks.clearDeadLetters(id(ctx), [ctx.params.delivery_id!]), id(ctx));
      if (r.unknown.length)
        throw new ApiError('RESOURCE_NOT_FOUND', `webhook ${id(ctx)} has no dead letter ${ctx.params.delivery_id}`, { delivery_id: ctx.params.delivery_id });
      return { data: r };
    }),
  ];
}
