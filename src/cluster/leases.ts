/**
 * Items of a cluster (environments) shared out among the nodes of a role by leases on the bus
 * (docs/scale.md "Rooms are owned, never shared"). Workers and store nodes hold their rooms
 * through this module; it states the rules once:
 *
 * - **Lease.** A node holds an item by an entry of a leases bucket, created only where none is
 *   (`create`), renewed by revision (`update`) four times per life on a timer of its own. An entry
 *   not renewed expires with the bucket's time to live; a renewal that finds another revision
 *   means the lease is lost, and the item's work stops (`drop(item, 'lost')`).
 * - **Validity by the local clock.** A lease renewed by a request sent at local time `t` cannot
 *   expire on the server before `t + ttl` (the server stores it after it was sent), so no other
 *   node can hold the item before then. {@link LeaseTable.validFor} says how long that is from now:
 *   a node fences what it commits for an item by it.
 * - **Fair share.** Live nodes announce themselves in a members bucket the same way (an entry per
 *   node, same life). Each holds at most its fair share, items over live nodes rounded up, and lets
 *   go of the newest beyond it, so a node that joins is given items without a restart.
 * - **Watches.** The members and items buckets are followed by watch: listing the keys of a bucket
 *   while it changes misses keys.
 * - **One node per name.** A node's announcement is created only where no live one is: a second
 *   node started with the name of a live one is refused (after waiting out one lease life, so a
 *   node restarted after a SIGKILL gets its name back).
 * - **Giving back.** An item let go (fair share, close) stays leased and renewed until its work has
 *   finished (`drop(item, 'released')`); then its lease is deleted for another node to take at once,
 *   unless the work says to let it lapse (what it started may still land after its end).
 */
import type { KV, KvEntry } from 'nats';
import { bucketKey } from '../bus/bus.js';
import type { Logger } from '../service/service.js';

/** The buckets a table of leases uses. */
export interface LeaseBuckets {
  /** An entry per leased item (value: the holder's id), living `ttlMs` unless renewed. */
  leases: KV;
  /** An entry per live node of the role, same life. */
  members: KV;
  /** The items to share out. */
  items: KV;
}

/** The work a node does on the items it holds. */
export interface LeaseWork {
  /** Starts work on an item just leased. A throw gives the lease back. */
  take(item: string): Promise<void>;
  /**
   * Stops work on an item: `released` while the lease is still held and renewed (finish what was
   * taken; the lease is given back after, or left to lapse when this resolves to `lapse`), `lost`
   * when another node may hold it already.
   */
  drop(item: string, why: 'released' | 'lost'): Promise<void | 'lapse'>;
  /**
   * An item's lease was renewed: `retaken` when it had lapsed with nobody taking it and was
   * created again (another node may have held it meanwhile). Called in the renewal's round.
   */
  renewed?(item: string, retaken: boolean): void;
}

/** What a {@link LeaseTable} runs by. */
export interface LeaseOptions {
  /** This node's name: its leases' value and its members key. */
  id: string;
  /** A lease's life without renewal, ms (the buckets' time to live). */
  ttlMs: number;
  buckets: LeaseBuckets;
  /** The item an entry of `items` stands for; undefined for an entry that is none. */
  itemOf(entry: KvEntry): string | undefined;
  work: LeaseWork;
  log: Logger;
  /** How the log names this node, e.g. `store s1`. */
  label: string;
}

interface Held {
  revision: number;
  /** Local time (performance.now) before which no other node can hold the item. */
  validUntil: number;
  /** Being given back: still renewed, no longer counted as held. */
  releasing: boolean;
}

/** Leases a node holds, kept, renewed and shared out by the rules of the module comment. */
export class LeaseTable {
  private readonly held = new Map<string, Held>();
  /** Members by key: when each was last seen announcing itself (local clock), from a watch. */
  private readonly membersSeen = new Map<string, number>();
  /** Items by key, from a watch of the items bucket. */
  private readonly itemsSeen = new Map<string, string>();
  private readonly watches: Array<{ stop(): void }> = [];
  private memberRevision = 0;
  private roundTimer: NodeJS.Timeout | undefined;
  private renewTimer: NodeJS.Timeout | undefined;
  private rounding: Promise<void> | undefined;
  private renewing: Promise<void> | undefined;
  /** Work on lost items being stopped (close waits for it). */
  private readonly dropping = new Set<Promise<void>>();
  private closed = false;
  private renewalsStopped = false;

  /** A table that holds nothing yet: {@link start} it. */
  constructor(private readonly o: LeaseOptions) {}

  /**
   * Announces the node (refused while another live node has its name), follows the buckets and
   * takes the node's share; then renews and shares out on timers until `close`. What it holds is
   * readable ({@link has}, {@link validFor}) from the first lease on, while it still takes others.
   * @throws Error when another live node has the name, or the bus does not answer
   */
  async start(): Promise<void> {
    await this.announceFirst();
    try {
      await this.follow();
    } catch (e) {
      await this.close();
      throw e;
    }
    const quarter = this.o.ttlMs / 4;
    this.renewTimer = setInterval(() => void this.renewOnce(), quarter);
    await this.roundOnce();
    this.roundTimer = setInterval(() => void this.roundOnce(), quarter);
  }

  /** The items held now (not those being given back), sorted. */
  holds(): string[] {
    return [...this.held].filter(([, h]) => !h.releasing).map(([k]) => k);
  }

  /** Whether this node holds the item's lease (also while giving it back), whatever its time left. */
  has(item: string): boolean {
    return this.held.has(item);
  }

  /** Live members seen (this node included). */
  members(): number {
    const now = Date.now();
    return Math.max(1, [...this.membersSeen.values()].filter((t) => now - t < this.o.ttlMs).length);
  }

  /**
   * How long, from now, no other node can hold the item (ms, by the local clock); 0 when this node
   * does not hold it or cannot say.
   */
  validFor(item: string): number {
    const h = this.held.get(item);
    return h ? Math.max(0, h.validUntil - performance.now()) : 0;
  }

  /** The node's announcement, created only where no live one is; one lease life to wait out a dead one's. */
  private async announceFirst(): Promise<void> {
    const key = bucketKey(this.o.id);
    const giveUp = Date.now() + 2 * this.o.ttlMs + 1000;
    for (;;) {
      try {
        this.memberRevision = await this.o.buckets.members.create(key, String(Date.now()));
        return;
      } catch (e) {
        if (Date.now() > giveUp) {
          throw new Error(`${this.o.label}: another live node has the name ${this.o.id} (${(e as Error).message}); give each node its own --name`);
        }
        await new Promise((ok) => setTimeout(ok, this.o.ttlMs / 4));
      }
    }
  }

  private async follow(): Promise<void> {
    const watch = async (kv: KV, name: string, on: (e: KvEntry) => void) => {
      let ready!: () => void;
      const initial = new Promise<void>((ok) => (ready = ok));
      const w = await kv.watch({ initializedFn: () => ready() });
      this.watches.push(w);
      void (async () => {
        try {
          for await (const e of w) on(e);
        } catch (err) {
          if (!this.closed) this.o.log('warn', `${this.o.label}: watch of ${name}: ${(err as Error).message}`);
        }
      })();
      await initial;
    };
    await watch(this.o.buckets.members, 'members', (e) => {
      if (e.operation === 'PUT') this.membersSeen.set(e.key, Date.now());
      else this.membersSeen.delete(e.key);
    });
    await watch(this.o.buckets.items, 'items', (e) => {
      let item: string | undefined;
      try {
        item = e.operation === 'PUT' ? this.o.itemOf(e) : undefined;
      } catch {
        item = undefined;
      }
      if (item !== undefined) this.itemsSeen.set(e.key, item);
      else this.itemsSeen.delete(e.key);
    });
  }

  private roundOnce(): Promise<void> {
    // One round at a time: a slow bus must not stack rounds.
    this.rounding ??= this.round().finally(() => (this.rounding = undefined));
    return this.rounding;
  }

  private renewOnce(): Promise<void> {
    // Never two renewals at once: the second would renew by a revision the first moved on.
    this.renewing ??= this.renew().finally(() => (this.renewing = undefined));
    return this.renewing;
  }

  /** Renews the announcement and every lease held (also those being given back). */
  private async renew(): Promise<void> {
    if (this.renewalsStopped) return;
    const { members, leases } = this.o.buckets;
    const key = bucketKey(this.o.id);
    try {
      try {
        this.memberRevision = await members.update(key, String(Date.now()), this.memberRevision);
      } catch {
        // Expired (the process stalled a lease life): announce again.
        this.memberRevision = await members.create(key, String(Date.now()));
      }
    } catch (e) {
      this.o.log('warn', `${this.o.label}: announcing: ${(e as Error).message}`);
    }
    for (const [item, h] of this.held) {
      const sent = performance.now();
      try {
        h.revision = await leases.update(bucketKey(item), this.o.id, h.revision);
        h.validUntil = sent + this.o.ttlMs;
        this.o.work.renewed?.(item, false);
      } catch {
        try {
          // Expired with nobody taking it: taken again.
          h.revision = await leases.create(bucketKey(item), this.o.id);
          h.validUntil = sent + this.o.ttlMs;
          this.o.work.renewed?.(item, true);
        } catch {
          if (this.held.get(item) !== h) continue;
          this.held.delete(item);
          this.o.log('warn', `${this.o.label}: lost the lease of ${item}`);
          // Not waited for here: the other leases' renewals must not wait on it.
          const p = this.dropSafely(item, 'lost')
            .then(() => undefined)
            .finally(() => this.dropping.delete(p));
          this.dropping.add(p);
        }
      }
    }
  }

  private async round(): Promise<void> {
    if (this.closed) return;
    try {
      const items = [...new Set(this.itemsSeen.values())].sort();
      const share = Math.ceil(items.length / this.members());
      // More than the share: let the newest go, for a node with fewer to take.
      for (let held = this.holds(); held.length > share && !this.closed; held = this.holds()) await this.release(held[held.length - 1]!);
      for (const item of items) {
        if (this.closed || this.holds().length >= share) break;
        if (this.held.has(item)) continue;
        const sent = performance.now();
        let revision: number;
        try {
          revision = await this.o.buckets.leases.create(bucketKey(item), this.o.id);
        } catch {
          continue; // held by another node
        }
        this.held.set(item, { revision, validUntil: sent + this.o.ttlMs, releasing: false });
        try {
          await this.o.work.take(item);
          this.o.log('info', `${this.o.label}: holds environment ${item}`);
        } catch (e) {
          this.o.log('error', `${this.o.label}: cannot take environment ${item}: ${(e as Error).message}`);
          await this.release(item);
        }
      }
    } catch (e) {
      this.o.log('warn', `${this.o.label}: ${(e as Error).message}`);
    }
  }

  private async dropSafely(item: string, why: 'released' | 'lost'): Promise<void | 'lapse'> {
    try {
      return await this.o.work.drop(item, why);
    } catch (e) {
      this.o.log('error', `${this.o.label}: stopping environment ${item}: ${(e as Error).message}`);
    }
  }

  /** Finishes an item's work while its lease is renewed, then gives the lease back. */
  async release(item: string): Promise<void> {
    const h = this.held.get(item);
    if (!h || h.releasing) return;
    h.releasing = true;
    const end = await this.dropSafely(item, 'released');
    // Lost meanwhile (the renewal dropped it): nothing to give back.
    if (this.held.get(item) !== h) return;
    this.held.delete(item);
    if (end === 'lapse') {
      this.o.log('warn', `${this.o.label}: ${item} given back with work still landing; its lease is left to lapse`);
      return;
    }
    try {
      await this.o.buckets.leases.delete(bucketKey(item), { previousSeq: h.revision });
    } catch {
      // Already expired or taken: nothing to give back.
    }
    this.o.log('info', `${this.o.label}: released environment ${item}`);
  }

  /** Gives every item back (for another node to take at once) and withdraws the announcement. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.roundTimer);
    await this.rounding;
    // Renewals go on while the items' work finishes.
    for (const item of [...this.held.keys()]) await this.release(item);
    this.renewalsStopped = true;
    clearInterval(this.renewTimer);
    await this.renewing;
    await Promise.all([...this.dropping]);
    for (const w of this.watches) w.stop();
    await this.o.buckets.members.delete(bucketKey(this.o.id)).catch(() => undefined);
  }
}
