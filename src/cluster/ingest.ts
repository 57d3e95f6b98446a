/**
 * The ingest role (`csipose serve --role ingest --bus nats://...`): one environment's CSI source
 * (UDP, MQTT, files, the simulator: `hardware.source` or `--source`) published to the bus,
 * `csi.<env>.<link>`: the frames of a link that came within one turn of the event loop go as one
 * message (a live source's packets mostly one by one; a file replayed fast, many at once). The
 * environment's configuration is put under its id in the `csipose_environments` bucket, where
 * workers find what to run and how. No model, no pipeline, no store (docs/scale.md).
 */
import { randomUUID } from 'node:crypto';
import type { Subscription } from 'rxjs';
import type { CsiFrame } from '../csi/frame.js';
import { siteLinks } from '../csi/radios.js';
import { Bus, bucketKey, csiSubject, Publisher } from '../bus/bus.js';
import { encodeCsiFrames } from '../bus/codec.js';
import type { ConfigSnapshot } from '../config/store.js';
import { parseSource } from '../sources/uri.js';
import type { Logger } from '../service/service.js';

/** What the `csipose_environments` bucket holds for an environment. */
export interface EnvironmentEntry {
  id: string;
  /** The ingest node's whole configuration: the environment's site, zones and view, and how its poses are made. */
  config: ConfigSnapshot;
  /** Epoch ms the ingest node put it. */
  at: number;
}

/** Most frames of a link in one message. */
const BATCH_FRAMES = 64;
/** Most sample bytes of a link in one message (NATS takes messages of up to 1 MB by default). */
const BATCH_BYTES = 256 * 1024;

/** A link's frames waiting for the end of the event loop's turn. */
interface LinkBatch {
  frames: CsiFrame[];
  bytes: number;
}

/** A running ingest node. */
export class IngestNode {
  private sub: Subscription | undefined;
  private ended: Promise<void>;
  private endedResolve!: () => void;
  /** Frames read from the source. */
  frames = 0;
  readonly publisher: Publisher;
  /** This start's id: message ids of frames (indices start again at each start). */
  private readonly session = randomUUID().slice(0, 8);
  /** Frames per link waiting to be published at the end of this turn of the event loop. */
  private readonly batches = new Map<string, LinkBatch>();
  private flushing: NodeJS.Immediate | undefined;
  private env = '';

  private constructor(
    readonly bus: Bus,
    readonly config: ConfigSnapshot,
  ) {
    this.publisher = new Publisher(bus);
    this.ended = new Promise((ok) => (this.endedResolve = ok));
  }

  /**
   * Puts the environment's configuration on the bus and starts publishing its source's frames.
   * @param bus the bus
   * @param config the configuration (the source is `source ?? hardware.source`)
   * @param source `--source`, overriding the configuration's
   * @param log where problems go
   * @returns the node; `close()` it
   */
  static async start(bus: Bus, config: ConfigSnapshot, source: string | undefined, log: Logger): Promise<IngestNode> {
    const node = new IngestNode(bus, config);
    const env = config.environment.id;
    const entry: EnvironmentEntry = { id: env, config, at: Date.now() };
    await bus.environments.put(bucketKey(env), JSON.stringify(entry));
    const radios = config.environment.site.radios;
    // A frame that names no link is on the environment's primary link (src/sources/uri.ts).
    const primary = siteLinks(radios)[0]?.id ?? 'primary';
    const uri = source ?? config.hardware.source;
    const frames = parseSource(uri).open('frame', { environmentId: env, view: () => config.environment.view, radios: () => radios });
    node.sub = frames.subscribe({
      next: (f) => node.publish(f as CsiFrame, env, primary),
      error: (e: unknown) => {
        log('error', `ingest: source ${uri}: ${(e as Error).message}`);
        node.endedResolve();
      },
      complete: () => {
        log('info', `ingest: source ${uri} ended after ${node.frames} frames`);
        node.endedResolve();
        // Said once the stream has taken them all (a file replayed fast is published in batches).
        node.flush();
        void node.publisher.settled(60_000).then((left) => {
          if (left === 0) log('info', `ingest: the stream took all ${node.frames} frames of ${uri}`);
          else log('warn', `ingest: ${left} message(s) of ${uri} not yet taken by the stream after 60 s`);
        });
      },
    });
    log('info', `ingest: environment ${env} from ${uri} to the bus`);
    return node;
  }

  private publish(f: CsiFrame, env: string, primary: string): void {
    this.frames++;
    // Frames from a source of another environment id cannot happen here: every source stamps the one given.
    this.env = env;
    const link = f.linkId ?? primary;
    let b = this.batches.get(link);
    if (!b) this.batches.set(link, (b = { frames: [], bytes: 0 }));
    b.frames.push(f);
    b.bytes += f.csi.byteLength;
    if (b.frames.length >= BATCH_FRAMES || b.bytes >= BATCH_BYTES) this.send(link, b);
    else this.flushing ??= setImmediate(() => this.flush());
  }

  /** Publishes every link's waiting frames. */
  flush(): void {
    if (this.flushing) clearImmediate(this.flushing);
    this.flushing = undefined;
    for (const [link, b] of this.batches) this.send(link, b);
  }

  private send(link: string, b: LinkBatch): void {
    if (b.frames.length === 0) return;
    // The message id (the first frame's) makes a message sent again after a lost acknowledgement harmless.
    this.publisher.publish(csiSubject(this.env, link), encodeCsiFrames(b.frames), `${this.session}:${link}:${b.frames[0]!.index}`);
    b.frames = [];
    b.bytes = 0;
  }

  /** Resolves when the source ends or fails (a file replayed to its end). */
  whenEnded(): Promise<void> {
    return this.ended;
  }

  /** Figures for the log and tests. */
  figures(): { frames: number; published: number; acked: number; failed: number; inFlight: number; lastError: string | null } {
    const p = this.publisher;
    return { frames: this.frames, published: p.published, acked: p.acked, failed: p.failed, inFlight: p.inFlight, lastError: p.lastError };
  }

  /** Stops reading the source and waits for what was published to be acknowledged. */
  async close(): Promise<void> {
    this.sub?.unsubscribe();
    this.endedResolve();
    this.flush();
    await this.publisher.settled();
  }
}
