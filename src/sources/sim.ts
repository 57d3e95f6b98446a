import { Observable, asyncScheduler, type SchedulerLike, type Subscription } from 'rxjs';
import type { CsiFrame } from '../csi/frame.js';
import { DEFAULT_RADIOS, type RadioConfig } from '../csi/radios.js';
import { viewCamera, viewSpec, type ViewSettings } from '../pose/camera.js';
import { CsiSimulator, type GroundTruth, type SimOptions } from '../sim/simulator.js';
import { MAX_SIM_LINKS } from '../sim/site.js';
import { SourceError } from './errors.js';
import { FAST_CHUNK, nextTurn } from './pace.js';
import { whenReady, type Demand } from './demand.js';

export interface SimSourceOptions {
  /** 1 = real time, 2 = twice as fast, 0 = as fast as possible. */
  speed?: number;
  scheduler?: SchedulerLike;
  /**
   * The reference view the ground truth is projected through (the service passes its
   * `environment.view`), read when the source opens and again before each sample is simulated: a
   * new object replaces the camera from the next sample simulated on (the source keeps one sample
   * ready ahead of the one it emits). Default: the simulator's own camera (`scenario.camera`, else
   * the default view centred across its room).
   */
  view?: () => Readonly<ViewSettings>;
  /** The consumer's backpressure: while it is paused no frame is simulated (src/sources/demand.ts). */
  demand?: Demand;
  /**
   * The site (the service passes its `environment.site.radios`), read when the source opens: the
   * simulator then simulates every link of it and the source emits their frames interleaved in
   * time order (tick by tick, each tick's frames in the site's link order). `params.links` keeps the
   * first N receivers; `params.nRx` / `params.nTx` replace every receiver's / the transmitter's
   * antenna count. Without it (and without `params.links`): the one-link simulator of `params`.
   */
  radios?: () => readonly RadioConfig[];
}

/**
 * Simulator settings that a `sim?...` URI can carry, plus whether to attach the ground truth and how
 * many of the site's receivers to simulate (`links`, 1..MAX_SIM_LINKS: the first N).
 */
export type SimParams = Partial<SimOptions> & { truth?: boolean; links?: number };

/**
 * The ground truth as plain JSON, attached to frames as `meta.truth` when asked for
 * (`sim?truth=1`), so that NDJSON output carries it beside the CSI.
 */
export function truthToJson(t: GroundTruth): Record<string, unknown> {
  return {
    time: t.time,
    seq: t.seq,
    person_count: t.personCount,
    persons: t.persons.map((p) => ({
      id: p.id,
      activity: p.activity,
      keypoints: Array.from(p.keypoints, (v) => Math.round(v * 10) / 10),
      visible: Array.from(p.visible),
      bbox: p.bbox,
      floor: p.floor,
      velocity: p.velocity,
    })),
    events: t.events,
  };
}

/**
 * Parses the query of a `sim?...` source URI.
 * Keys: seed, people (0-4), nsub (30|56|114), band (2.4|5), rate (Hz), nrx, ntx, snr (dB), env, truth (0|1),
 * fall (seconds: the first person falls then, `ScenarioOptions.fallAt`), realism (ideal|room: the
 * room the simulator reproduces, `SimOptions.realism`; docs/simulator.md), links (1..8,
 * MAX_SIM_LINKS: simulate the first N receivers of the site, the service's `environment.site.radios`
 * or else DEFAULT_RADIOS; 1 is the one-link case; more than the site has is an error when the source
 * opens). On a site, nrx and ntx replace the antenna counts of every receiver and of the transmitter.
 * @throws SourceError for values out of range
 */
export function parseSimParams(q: URLSearchParams): SimParams {
  const out: SimParams = {};
  const num = (k: string, min: number, max: number, integer = true): number | undefined => {
    const s = q.get(k);
    if (s === null) return undefined;
    const v = Number(s);
    if (!Number.isFinite(v) || v < min || v > max || (integer && !Number.isInteger(v)))
      throw new SourceError(`sim: ${k} must be ${integer ? 'an integer' : 'a number'} in ${min}..${max}, got "${s}"`);
    return v;
  };
  const seed = num('seed', 0, 2 ** 32 - 1);
  if (seed !== undefined) out.seed = seed;
  const people = num('people', 0, 4);
  if (people !== undefined) out.people = people;
  const nsub = num('nsub', 30, 114);
  if (nsub !== undefined) {
    if (nsub !== 30 && nsub !== 56 && nsub !== 114) throw new SourceError(`sim: nsub must be 30, 56 or 114, got ${nsub}`);
    out.nSub = nsub;
  }
  const band = q.get('band');
  if (band !== null) {
    if (band !== '2.4' && band !== '5') throw new SourceError(`sim: band must be 2.4 or 5, got "${band}"`);
    out.band = band;
  }
  const rate = num('rate', 1, 2000, false);
  if (rate !== undefined) out.rateHz = rate;
  const nrx = num('nrx', 1, 4);
  if (nrx !== undefined) out.nRx = nrx;
  const ntx = num('ntx', 1, 4);
  if (ntx !== undefined) out.nTx = ntx;
  const env = q.get('env');
  if (env !== null) out.environmentId = env;
  const truth = q.get('truth');
  if (truth !== null) out.truth = truth === '1' || truth === 'true';
  const fall = num('fall', 0, 86_400, false);
  if (fall !== undefined) out.scenario = { ...out.scenario, fallAt: fall };
  const realism = q.get('realism');
  if (realism !== null) {
    if (realism !== 'ideal' && realism !== 'room') throw new SourceError(`sim: realism must be ideal or room, got "${realism}"`);
    out.realism = realism;
  }
  const links = num('links', 1, MAX_SIM_LINKS);
  if (links !== undefined) out.links = links;
  return out;
}

/**
 * The simulator options of a site: its first `links` receivers, the URI's antenna counts applied.
 * @param o the URI's simulator options
 * @param radios the site, or undefined for the one-link simulator
 * @param links how many receivers to keep (all when undefined)
 * @returns the options to simulate
 * @throws SourceError when the site has fewer receivers than `links`
 */
function withSite(o: SimOptions, radios: readonly RadioConfig[] | undefined, links: number | undefined): SimOptions {
  if (radios === undefined) return o;
  const { nRx, nTx, ...rest } = o;
  const rxs = radios.filter((r) => r.role === 'rx');
  if (links !== undefined && links > rxs.length)
    throw new SourceError(`sim: links=${links} but the site has ${rxs.length} receiver${rxs.length === 1 ? '' : 's'}`);
  const keep = new Set(rxs.slice(0, links ?? rxs.length));
  const site = radios
    .filter((r) => r.role !== 'rx' || keep.has(r))
    .map((r) => (r.role === 'rx' && nRx !== undefined ? { ...r, antennas: nRx } : r.role === 'tx' && nTx !== undefined ? { ...r, antennas: nTx } : r));
  return { ...rest, radios: site };
}

/**
 * The simulator as a source of frames: in real time (frames are due at their simulated time,
 * emitted in small batches per timer tick so timer granularity never slows the rate), at a multiple
 * of it, or as fast as possible. In real time the simulated clock starts now; as fast as possible it
 * starts at the simulator's fixed epoch, so the same seed gives the same stream.
 *
 * @param params simulator settings (see parseSimParams)
 * @param opts speed, scheduler, reference view, backpressure and site
 * @returns frames, with `meta.truth` attached when `params.truth` is set; on a site one frame per
 *   link per tick, every frame of a tick with the tick's truth and its events on the first only
 * @example
 * simSource({ seed: 1, people: 2 }, { speed: 0 }).pipe(take(1000))
 * simSource({ seed: 1, links: 2 }, { speed: 0, radios: () => DEFAULT_RADIOS }) // tx-rx1, tx-rx2, tx-rx1, ...
 */
export function simSource(params: SimParams, opts: SimSourceOptions = {}): Observable<CsiFrame> {
  const speed = opts.speed ?? 1;
  const scheduler = opts.scheduler ?? asyncScheduler;
  const { truth: withTruth, links, ...simOpts } = params;
  const view = opts.view;
  const demand = opts.demand;
  return new Observable<CsiFrame>((subscriber) => {
    const wallStart = scheduler.now();
    let viewSeen = view?.();
    // Errors thrown here (a site with too few receivers, invalid options) reach the subscriber.
    const sited = withSite(simOpts, opts.radios?.() ?? (links !== undefined ? DEFAULT_RADIOS : undefined), links);
    const withView = viewSeen ? { ...sited, scenario: { ...sited.scenario, camera: viewSpec(viewSeen) } } : sited;
    const sim = new CsiSimulator(speed > 0 && withView.startTime === undefined ? { ...withView, startTime: wallStart } : withView);
    /** A changed view (a new configuration snapshot) takes over from the next sample simulated. */
    const followView = (): void => {
      const v = view!();
      if (v === viewSeen) return;
      viewSeen = v;
      sim.scenario.camera = viewCamera(v);
    };
    let simStart = NaN;
    let pending: Subscription | undefined;
    const out = (s: { frame: CsiFrame; truth: GroundTruth }): CsiFrame =>
      withTruth ? { ...s.frame, meta: { ...(s.frame.meta ?? {}), truth: truthToJson(s.truth) } } : s.frame;
    let next = sim.next();
    const loop = (): void => {
      try {
        let emitted = 0;
        while (!subscriber.closed) {
          if (demand?.paused) {
            pending = whenReady(demand, loop);
            return;
          }
          if (Number.isNaN(simStart)) simStart = next.truth.time;
          if (speed > 0) {
            const due = wallStart + (next.truth.time - simStart) / speed;
            const wait = due - scheduler.now();
            if (wait > 0) {
              pending = scheduler.schedule(loop, Math.max(wait, 1));
              return;
            }
          } else if (++emitted > FAST_CHUNK) {
            pending = nextTurn(scheduler, loop);
            return;
          }
          const s = next;
          if (view) followView();
          next = sim.next();
          subscriber.next(out(s));
        }
      } catch (e) {
        subscriber.error(e);
      }
    };
    pending = scheduler.schedule(loop, 0);
    return () => pending?.unsubscribe();
  });
}
