/**
 * The ingest role (`csipose serve --role ingest --bus nats://...`): one environment's CSI source
 * (UDP, MQTT, files, the simulator: `hardware.source` or `--source`) published frame by frame to
 * the bus, `csi.<env>.<link>`, and the environment's configuration put under its id in the
 * `csipose_environments` bucket, where workers find what to run and how. No model, no pipeline,
 * no store (docs/scale.md).
 */
import { randomUUID } from 'node:crypto';
import type { Subscription } from 'rxjs';
import type { CsiFrame } from '../csi/frame.js';
import { siteLinks } from '../csi/radios.js';
import { Bus, bucketKey, csiSubject, Publisher } from '../bus/bus.js';
import { encodeCsiFrame } from '../bus/codec.js';
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
      },
    });
    log('info', `ingest: environment ${env} from ${uri} to the bus`);
    return node;
  }

  private publish(f: CsiFrame, env: string, primary: string): void {
    this.frames++;
    // Frames from a source of another environment id cannot happen here: every source stamps the one given.
    // The message id makes a frame sent again after a lost acknowledgement harmless.
    const link = f.linkId ?? primary;
    this.publisher.publish(csiSubject(env, link), encodeCsiFrame(f), `${this.session}:${link}:${f.index}`);
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
    await this.publisher.settled();
  }
}
