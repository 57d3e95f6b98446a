import { randomBytes } from 'node:crypto';
import { readJsonFile, writeJsonAtomic } from '../../auth/jsonFile.js';
import { readSubscription, type SubscribeRequest } from '../subscriptions.js';

/** A registered endpoint, as kept in `<dataDir>/webhooks/endpoints.json` (mode 0600). */
export interface Endpoint {
  /** `wh_` and 16 hex digits. */
  readonly id: string;
  url: string;
  description: string;
  enabled: boolean;
  /** What it receives: channels `alerts` and `events`, each with its filters, normalised. */
  subscriptions: SubscribeRequest[];
  /** The signing secret (kept in clear: the service needs it to sign; the file is the owner's only). */
  secret: string;
  /** The secret before the last rotation, honoured (a second `v1=`) until `previousUntil`. */
  previousSecret: string | null;
  /** Epoch ms. */
  previousUntil: number;
  /** Epoch ms. */
  readonly createdAt: number;
  updatedAt: number;
}

const FILE_VERSION = 1;

/** The webhooks file could not be read; the message names it. */
export class WebhookFileError extends Error {
  override readonly name = 'WebhookFileError';
}

/** A new endpoint id. */
export function newEndpointId(): string {
  return `wh_${randomBytes(8).toString('hex')}`;
}

/** A new delivery id (the event id receivers deduplicate by). */
export function newDeliveryId(): string {
  return `whd_${randomBytes(12).toString('hex')}`;
}

/**
 * The registered endpoints, loaded at start and written whole (atomically) at every change. Only
 * the service writes the file, so no lock is needed.
 */
export class Registry {
  private readonly endpoints = new Map<string, Endpoint>();

  /**
   * @param path the file (`<dataDir>/webhooks/endpoints.json`)
   * @throws WebhookFileError when the file exists but is not a registry (never silently emptied)
   */
  constructor(private readonly path: string) {
    let doc: unknown;
    try {
      doc = readJsonFile(path);
    } catch (e) {
      throw new WebhookFileError((e as Error).message);
    }
    if (doc === undefined) return;
    const list = (doc as { endpoints?: unknown }).endpoints;
    if (!Array.isArray(list)) throw new WebhookFileError(`${path} holds no endpoints list; fix or remove it`);
    for (const e of list as Endpoint[]) {
      // Read again through the subscription reader: a file written by an older build gets today's defaults.
      try {
        e.subscriptions = e.subscriptions.map((s) => readSubscription(s.channel, s.filters, ['alerts', 'events']));
      } catch (err) {
        throw new WebhookFileError(`${path}: webhook ${String(e.id)} cannot be read (${(err as Error).message}); fix or remove it`);
      }
      this.endpoints.set(e.id, e);
    }
  }

  all(): Endpoint[] {
    return [...this.endpoints.values()];
  }

  get(id: string): Endpoint | undefined {
    return this.endpoints.get(id);
  }

  get size(): number {
    return this.endpoints.size;
  }

  /** Adds or replaces an endpoint and writes the file (callers pass a copy: the one held changes only once it is written). */
  save(e: Endpoint): void {
    const next = new Map(this.endpoints).set(e.id, e);
    this.write(next);
    this.endpoints.set(e.id, e);
  }

  /** @returns false when there is no such endpoint */
  remove(id: string): boolean {
    if (!this.endpoints.has(id)) return false;
    const next = new Map(this.endpoints);
    next.delete(id);
    this.write(next);
    this.endpoints.delete(id);
    return true;
  }

  /** Writes the file first, so a failed write (a full disk) changes nothing in memory either. */
  private write(endpoints: ReadonlyMap<string, Endpoint>): void {
    writeJsonAtomic(this.path, { version: FILE_VERSION, endpoints: [...endpoints.values()] });
  }
}
