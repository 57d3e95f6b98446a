import type { CsiFrame } from '../csi/frame.js';
import type { PoseFrame } from '../pose/types.js';
import type { InferStats } from '../../operators/infer.js';
import type { MultiPersonTracker } from '../pose/tracker.js';
import type { LinkReport, LinkStatsHolder } from '../csi/linkMonitor.js';
import { Ewma, RateMeter } from './metrics.js';

/** Sources that sent a frame this recently count as connected routers. */
const ROUTER_WINDOW_MS = 10_000;

/** What the latest pose frame of an environment showed. */
interface LatestFigures {
  persons: number;
  /** Sum of its persons' confidences. */
  confidence: number;
  csiQuality: number;
}

/**
 * What the live pipeline does, measured as it runs: CSI frames in, pose frames out, latency,
 * inference queue, trackers. The session feeds it; snapshots read it.
 */
export class PipelineFigures {
  /** CSI frames into the live pipeline. */
  readonly csiRate = new RateMeter(8192);
  /** Pose frames out of it. */
  readonly poseRate = new RateMeter(2048);
  readonly latency = new Ewma(0.05);
  /** Persons detected, over a minute. */
  readonly detections = new RateMeter(8192, 60_000);
  readonly inferStats: InferStats = { batches: 0, rows: 0, dropped: 0, lastBatchMs: 0, avgBatchMs: 0, queue: 0 };
  readonly trackers = new Map<string, MultiPersonTracker>();
  /** The live pipeline's `links` stage puts its monitor here (per session). */
  readonly links: LinkStatsHolder = {};
  /** Last frame time per CSI source id. */
  private readonly sources = new Map<string, number>();
  /** The latest frame's figures per environment (kept across sessions, as the latest frames are). */
  private readonly latest = new Map<string, LatestFigures>();
  lastFrameAt = 0;
  lastPoseAt = 0;

  /** One CSI frame entered the pipeline. */
  csi(f: CsiFrame): void {
    this.csiRate.mark();
    this.lastFrameAt = Date.now();
    this.sources.set(f.sourceId, this.lastFrameAt);
  }

  /** One pose frame left it. */
  pose(f: PoseFrame): void {
    this.poseRate.mark();
    this.latency.add(f.processingMs);
    this.lastPoseAt = Date.now();
    if (f.persons.length) this.detections.mark(performance.now(), f.persons.length);
    let confidence = 0;
    for (const p of f.persons) confidence += p.confidence;
    // One record per environment, rewritten in place: nothing is allocated per frame once it exists.
    const l = this.latest.get(f.environmentId);
    if (l) {
      l.persons = f.persons.length;
      l.confidence = confidence;
      l.csiQuality = f.csiQuality;
    } else this.latest.set(f.environmentId, { persons: f.persons.length, confidence, csiQuality: f.csiQuality });
  }

  /**
   * Over the latest frame of every environment: the persons in them, the mean confidence of
   * those persons and the mean CSI quality of the frames (0 without persons or frames).
   */
  latestFigures(): { persons: number; trackQuality: number; csiQuality: number } {
    let persons = 0;
    let confidence = 0;
    let quality = 0;
    for (const l of this.latest.values()) {
      persons += l.persons;
      confidence += l.confidence;
      quality += l.csiQuality;
    }
    const n = this.latest.size;
    return { persons, trackQuality: persons ? confidence / persons : 0, csiQuality: n ? quality / n : 0 };
  }

  /** Distinct CSI sources that sent a frame in the last 10 s. */
  routerCount(now = Date.now()): number {
    let n = 0;
    for (const [id, t] of this.sources) {
      if (now - t < ROUTER_WINDOW_MS) n++;
      else this.sources.delete(id);
    }
    return n;
  }

  /** Every link of the running session's site, then unknown links still sending: state and figures (operators/links.ts). */
  linkReports(): LinkReport[] {
    return this.links.monitor?.report() ?? [];
  }

  /** Tracks in the `active` state over every environment. */
  activeTracks(): number {
    let n = 0;
    for (const t of this.trackers.values()) for (const r of t.tracks()) if (r.status === 'active') n++;
    return n;
  }
}
