/**
 * The CSI simulator: the service's embedded default source, and the training and scoring data
 * generator for the pose model.
 *
 * Design
 * - Coordinates: room metres, x across the room (0..width), y into its depth (0..depth), z up from
 *   the floor. Angles in radians; headings from +x towards +y. Time: the simulation advances in
 *   ticks of 1/rateHz seconds; tick s is at startTime + s * 1000 / rateHz epoch ms (the truth clock)
 *   and is packet sequence number s.
 * - Each tick: people move (scenario.ts: behaviour, skeleton.ts: kinematics), their bodies become
 *   23 point scatterers each, the channel (channel.ts) sums line of sight, six first-order surface
 *   reflections and one path per scatterer over every subcarrier and antenna pair, and the
 *   receiver's impairments (impairments.ts) are applied. CSI is in linear channel units (|H| of the
 *   line of sight is lambda / (4 pi d), ~1e-3 across a room), or in integer counts when quantised.
 * - Impairments, per packet: common phase (CFO/PLL: one random phase for all subcarriers and
 *   antennas); linear phase slope across subcarriers (sampling time offset, same for all
 *   antennas); AGC gain that occasionally jumps by a few dB and stays; complex Gaussian noise at
 *   snrDb below the empty-room channel; packets lost in Gilbert-Elliott bursts (their sequence
 *   numbers are missing from the stream, the truth clock still advances); Gaussian timestamp
 *   jitter on `frame.time` only; rare single-sample outliers; optional int quantisation.
 * - Ground truth is exact: keypoints are the skeleton's own joints projected by the camera of the
 *   reference view (src/pose/camera.ts), labels and events come from the behaviour state machine,
 *   all at the packet's true time (no jitter).
 * - Determinism: the seed drives independent random streams for placement, each person's
 *   behaviour, the impairments and packet loss, so the same options give byte-identical streams,
 *   and switching one impairment does not change how people move.
 * - RSSI per receive antenna is txPowerDbm plus the mean clean channel power of that antenna plus
 *   noise, in whole dBm (before AGC, as hardware measures it); `noise` is the noise floor in dBm.
 * - Defaults: a 6 x 5 x 2.8 m room; transmit array on the back wall and receive array on the front
 *   wall, both at 1.2 m with antennas along x, half a wavelength apart; the camera is the default
 *   reference view (environment.view): on the front wall at 1.6 m looking into the room, pitched
 *   10 degrees down (90 degree horizontal field of view, 640x480). 2.4 GHz is channel
 *   6 (2437 MHz), 5 GHz channel 36 (5180 MHz); the 114-subcarrier layout is 40 MHz HT40+, whose
 *   centre is 10 MHz above the primary channel's (2447 / 5190 MHz).
 * - Realism (`realism`, realism.ts and room.ts; docs/simulator.md): 'ideal' (the default) is the
 *   room described above, with a static channel that never changes. 'room' adds furniture and wall
 *   clutter, second-order reflections, body shadowing, dipole antenna patterns, drifting per-chain
 *   phase and gain offsets, a device clock with offset and skew, and a static channel that wanders
 *   (reflectivity drift, clutter moved by air, a door opening and closing). Each is a setting of
 *   its own. 'ideal' runs exactly the code it always ran, so its stream is unchanged.
 * - Sites (`radios`, site.ts; docs/simulator.md "Sites: several receivers"): one transmitter and up
 *   to MAX_SIM_LINKS receivers, each array placed from its radio. Per tick the people move once and
 *   every link computes its own channel through its own geometry (the room's one static scene seen
 *   from its arrays, bodies shadowing its own paths) and applies its own receiver: impairments,
 *   packet loss, chain offsets and device clock from streams of its own (rng.ts linkStreamTag: the
 *   first link draws what the one-link simulator draws). The truth is one per tick.
 * - Not modelled, even in 'room' (a model trained here will meet these only on real data): paths
 *   that bounce off a wall and a body, antenna coupling, the hardware's own frequency response,
 *   camera occlusion (a keypoint is "visible" when it is in the field of view), clothing and body
 *   shape beyond height.
 */

import type { CsiFrame } from '../csi/frame.js';
import type { RadioConfig } from '../csi/radios.js';
import { SUBCARRIERS, type SubcarrierLayout } from '../csi/subcarriers.js';
import { elementPattern, type ElementPattern } from './antenna.js';
import { ChannelModel, SPEED_OF_LIGHT } from './channel.js';
import { IMPAIRMENT_DEFAULTS, Impairments, resolveImpairments, type ImpairmentOptions, type ImpairmentSettings } from './impairments.js';
import { isIdeal, resolveRealism, type RealismOptions, type RealismPreset, type RealismSettings } from './realism.js';
import { deriveSeed, linkStreamTag, Rng } from './rng.js';
import { arrayPatterns, DOOR_SCATTERERS, RoomScene } from './room.js';
import { arrayPositions, MAX_PEOPLE, Scenario, type Activity, type PersonSpec, type ScenarioOptions } from './scenario.js';
import { MAX_SIM_ANTENNAS, radioArray, radioFacing, resolveSimSite } from './site.js';
import { NUM_KEYPOINTS, SCATTERERS_PER_BODY } from './skeleton.js';

// The layouts live with the frame model (src/csi/subcarriers.ts); re-exported for the simulator's callers.
export { SUBCARRIERS, type SubcarrierLayout };

export interface SimOptions {
  /** Seed of every random stream; default 1. */
  seed?: number;
  /** Packets per second; default 100. */
  rateHz?: number;
  /** '2.4' (channel 6) or '5' (channel 36); default '5'. */
  band?: '2.4' | '5';
  /** Subcarrier layout; 114 is a 40 MHz channel (HT40+ on the band's primary channel). Default 30. */
  nSub?: SubcarrierLayout;
  /** Receive antennas (1-4); default 3. */
  nRx?: number;
  /** Transmit antennas (1-4); default 3. */
  nTx?: number;
  /** Number of generated people (0-4), or explicit people with optional scripts; default 2. */
  people?: number | readonly PersonSpec[];
  /** Room, antennas, camera and behaviour. */
  scenario?: ScenarioOptions;
  /** Hardware impairments; `false` for a clean channel. Unset fields take IMPAIRMENT_DEFAULTS. */
  impairments?: ImpairmentOptions | false;
  /** Include the line-of-sight path (default true); false leaves reflections and bodies only. */
  lineOfSight?: boolean;
  /** Epoch ms of tick 0; default 2026-01-01T00:00:00Z, fixed so that a seed gives an identical stream. */
  startTime?: number;
  environmentId?: string;
  sourceId?: string;
  /** Total transmit power, dBm (for RSSI); default 20. */
  txPowerDbm?: number;
  /** Override the centre frequency (subcarrier index 0), Hz. */
  centreFrequencyHz?: number;
  /**
   * How much of a real room to simulate: 'ideal' (default: today's stream, unchanged), 'room', or
   * options whose unset fields come from their `preset` (realism.ts, docs/simulator.md).
   */
  realism?: RealismPreset | RealismOptions;
  /**
   * The site: one transmitter and 1..MAX_SIM_LINKS receivers (src/csi/radios.ts; the service's
   * `environment.site.radios`, e.g. DEFAULT_RADIOS). Each array is placed from its radio (position,
   * `yaw_deg` through antennaAxis, `antennas`, `spacing_m`), and each tick gives one frame per link
   * in siteLinks order (`nextTick`), each with its `linkId`, the `sourceId` `<sourceId>#<linkId>`
   * and its own receiver (impairments, chain offsets, clock), of one room with the same people.
   * Sets the arrays: nRx, nTx, scenario.tx and scenario.rx must be unset. Default: none, one link
   * from nRx, nTx, scenario.tx and scenario.rx, frames without `linkId`.
   */
  radios?: readonly RadioConfig[];
}

/** Defaults of SimOptions. */
export const SIM_DEFAULTS = Object.freeze({
  seed: 1,
  rateHz: 100,
  band: '5' as '2.4' | '5',
  nSub: 30 as SubcarrierLayout,
  nRx: 3,
  nTx: 3,
  people: 2,
  startTime: Date.UTC(2026, 0, 1),
  environmentId: 'default',
  sourceId: 'sim',
  txPowerDbm: 20,
  impairments: IMPAIRMENT_DEFAULTS,
  realism: 'ideal' as RealismPreset,
});

/** One person in the ground truth of a sample. */
export interface TruthPerson {
  id: number;
  activity: Activity;
  /** 17 x (u, v) pixels of the camera view, COCO order; NaN for points behind the camera. */
  keypoints: Float32Array;
  /** 17 flags: 1 = in front of the camera and inside the image. */
  visible: Uint8Array;
  /** 17 x (x, y, z) room metres. */
  keypoints3d: Float32Array;
  /** Box around the visible keypoints, padded (src/pose/camera.ts), pixels; [0, 0, 0, 0] when none is visible. */
  bbox: [number, number, number, number];
  /** Pelvis (mid-hip) projected on the floor, metres. */
  floor: { x: number; y: number };
  /** Pelvis floor displacement over the last tick divided by the tick, m/s. */
  velocity: { x: number; y: number };
  /** Epoch ms of the current/last fall start, while falling or lying after that fall. */
  fallOnset?: number;
}

export interface TruthEvent {
  /** `enter`, `leave`: a person who comes and goes (PersonSpec.enterAt, leaveAt) appeared or disappeared. */
  type: 'fall_start' | 'fall_end' | 'activity_change' | 'enter' | 'leave';
  personId: number;
  /** Epoch ms of the tick it happened in (truth clock). */
  time: number;
  /** The new activity (activity_change only). */
  activity?: Activity;
}

export interface GroundTruth {
  /** Epoch ms of the packet (no jitter). */
  time: number;
  seq: number;
  personCount: number;
  persons: TruthPerson[];
  /** Events since the previous emitted sample, including those of ticks whose packets were lost. */
  events: TruthEvent[];
}

export interface SimSample {
  frame: CsiFrame;
  truth: GroundTruth;
}

/** One tick of a site: the frames of the links that received it, and its one ground truth. */
export interface SimTick {
  /** One frame per link whose packet arrived, in the site's link order (never empty). */
  frames: CsiFrame[];
  truth: GroundTruth;
}

/** One link of a simulator: a transmit array, a receive array, the channel between them and its receiver. */
export interface SimLink {
  /** `<tx>-<rx>` (radios.ts linkId), carried by its frames as `linkId`; undefined without `radios`. */
  readonly id: string | undefined;
  /** The `sourceId` of its frames: `<sourceId>#<link id>` on a site, else `sourceId`. */
  readonly sourceId: string;
  readonly nRx: number;
  readonly nTx: number;
  /** Antenna positions, n * 3 (x, y, z), metres. */
  readonly txPositions: Float64Array;
  readonly rxPositions: Float64Array;
  readonly channelModel: ChannelModel;
  /** The room as this link sees it (realism other than 'ideal'); null in the ideal room. */
  readonly room: RoomScene | null;
}

/** A link with its receiver's state. */
class Link implements SimLink {
  /** Frames emitted so far (the next frame's `index`). */
  emitted = 0;
  /** Whether this tick's packet was lost. */
  lost = false;
  readonly clean: Float64Array;
  /** The bodies' scatterers as this link's room shadows them (room only). */
  readonly scat: Float64Array;
  readonly noiseDbm: number;

  constructor(
    readonly id: string | undefined,
    readonly sourceId: string,
    readonly nRx: number,
    readonly nTx: number,
    readonly txPositions: Float64Array,
    readonly rxPositions: Float64Array,
    readonly channelModel: ChannelModel,
    readonly room: RoomScene | null,
    readonly imp: Impairments,
    txPowerDbm: number,
  ) {
    this.clean = new Float64Array(channelModel.size);
    this.scat = new Float64Array(room !== null ? (MAX_PEOPLE * SCATTERERS_PER_BODY + DOOR_SCATTERERS) * 4 : 0);
    this.noiseDbm = imp.noisePower > 0 ? round1(txPowerDbm + 10 * Math.log10(imp.noisePower)) : NaN;
  }
}

/** Resolved options. */
interface Resolved {
  seed: number;
  rateHz: number;
  band: '2.4' | '5';
  nSub: SubcarrierLayout;
  startTime: number;
  environmentId: string;
  sourceId: string;
  txPowerDbm: number;
  centreHz: number;
  channel: number;
  bandwidthMhz: number;
  impairments: ImpairmentSettings;
  realism: RealismSettings;
}

/**
 * Simulated CSI with exact ground truth.
 *
 * @example
 * const sim = new CsiSimulator({ seed: 7, people: 2 });
 * const { frame, truth } = sim.next();
 * frame.csi.length; // 3 * 3 * 30 * 2
 * truth.persons[0].keypoints; // 17 x (u, v) pixels
 *
 * const site = new CsiSimulator({ seed: 7, radios: DEFAULT_RADIOS });
 * const { frames, truth } = site.nextTick(); // up to 3 frames (tx-rx1, tx-rx2, tx-rx3), one truth
 */
export class CsiSimulator {
  readonly scenario: Scenario;
  /** The first link's channel (the only one without `radios`). */
  readonly channelModel: ChannelModel;
  readonly subcarriers: Int16Array;
  /** Centre frequency (subcarrier index 0), Hz. */
  readonly centreHz: number;
  readonly rateHz: number;
  /** The first link's non-ideal room (realism other than 'ideal'); null in the ideal room. */
  readonly room: RoomScene | null;
  /** The links, in the site's order (one without `radios`). */
  readonly links: readonly SimLink[];
  private readonly o: Resolved;
  private readonly linkStates: Link[];
  private readonly scat: Float64Array;
  private tick = 0;
  private emittedCount = 0;
  private lastSeq = -1;
  private events: TruthEvent[] = [];
  // Frames of the last tick that next() has not returned yet.
  private queue: CsiFrame[] = [];
  private queuePos = 0;
  private queueTruth: GroundTruth | null = null;

  /**
   * @param options see SimOptions; every field is optional
   * @throws RangeError on invalid options
   */
  constructor(options: SimOptions = {}) {
    const seed = options.seed ?? SIM_DEFAULTS.seed;
    const rateHz = options.rateHz ?? SIM_DEFAULTS.rateHz;
    const band = options.band ?? SIM_DEFAULTS.band;
    const nSub = options.nSub ?? SIM_DEFAULTS.nSub;
    const site = options.radios !== undefined ? resolveSimSite(options.radios) : null;
    if (site !== null && (options.nRx !== undefined || options.nTx !== undefined || options.scenario?.tx !== undefined || options.scenario?.rx !== undefined)) {
      throw new RangeError('sim: radios places the arrays; leave nRx, nTx, scenario.tx and scenario.rx unset');
    }
    const nRx = site !== null ? site.links[0]!.rx.antennas : (options.nRx ?? SIM_DEFAULTS.nRx);
    const nTx = site !== null ? site.tx.antennas : (options.nTx ?? SIM_DEFAULTS.nTx);
    if (!Number.isFinite(seed)) throw new RangeError('sim: seed must be a finite number');
    if (!(rateHz > 0 && rateHz <= 10_000)) throw new RangeError('sim: rateHz must be in (0, 10000]');
    if (band !== '2.4' && band !== '5') throw new RangeError("sim: band must be '2.4' or '5'");
    if (!(nSub in SUBCARRIERS)) throw new RangeError('sim: nSub must be 30, 56 or 114');
    for (const [k, v] of [
      ['nRx', nRx],
      ['nTx', nTx],
    ] as const) {
      if (!(Number.isInteger(v) && v >= 1 && v <= MAX_SIM_ANTENNAS)) throw new RangeError(`sim: ${k} must be an integer 1..${MAX_SIM_ANTENNAS}`);
    }
    const bandwidthMhz = nSub === 114 ? 40 : 20;
    const channel = band === '5' ? 36 : 6;
    const primaryHz = band === '5' ? 5_180e6 : 2_437e6;
    // HT40+: the 40 MHz channel's centre is 10 MHz above the primary 20 MHz channel's.
    const centreHz = options.centreFrequencyHz ?? (bandwidthMhz === 40 ? primaryHz + 10e6 : primaryHz);
    if (!(centreHz >= 1e9 && centreHz <= 100e9)) throw new RangeError('sim: centreFrequencyHz must be 1..100 GHz');
    const startTime = options.startTime ?? SIM_DEFAULTS.startTime;
    if (!Number.isFinite(startTime)) throw new RangeError('sim: startTime must be finite');
    const txPowerDbm = options.txPowerDbm ?? SIM_DEFAULTS.txPowerDbm;
    if (!(txPowerDbm >= -30 && txPowerDbm <= 40)) throw new RangeError('sim: txPowerDbm must be in -30..40');
    const sourceId = options.sourceId ?? SIM_DEFAULTS.sourceId;
    this.o = {
      seed,
      rateHz,
      band,
      nSub,
      startTime,
      environmentId: options.environmentId ?? SIM_DEFAULTS.environmentId,
      sourceId,
      txPowerDbm,
      centreHz,
      channel,
      bandwidthMhz,
      impairments: resolveImpairments(options.impairments),
      realism: resolveRealism(options.realism ?? SIM_DEFAULTS.realism),
    };
    this.rateHz = rateHz;
    this.centreHz = centreHz;
    this.subcarriers = SUBCARRIERS[nSub];
    const lambda = SPEED_OF_LIGHT / centreHz;

    const scenarioOpts: ScenarioOptions =
      site !== null ? { ...options.scenario, tx: radioArray(site.tx), rx: radioArray(site.links[0]!.rx) } : (options.scenario ?? {});
    this.scenario = new Scenario(scenarioOpts, options.people ?? SIM_DEFAULTS.people, seed, lambda, nTx, nRx);
    const ideal = isIdeal(this.o.realism);
    const los = options.lineOfSight ?? true;
    const room = this.scenario.room;
    // Every link's scene keeps the whole site's arrays clear, so that all links see one layout.
    const keepClear =
      site !== null && site.links.length > 1 ? site.links.map((l) => ({ x: l.rx.x, y: l.rx.y })).concat({ x: site.tx.x, y: site.tx.y }) : undefined;
    const linkDefs =
      site !== null
        ? site.links.map((l, i) => ({
            id: l.id as string | undefined,
            rx: l.rx,
            nRx: l.rx.antennas,
            rxPos: i === 0 ? this.scenario.rxPositions : arrayPositions(radioArray(l.rx), l.rx.antennas, l.rx.spacing_m),
          }))
        : [{ id: undefined as string | undefined, rx: undefined, nRx, rxPos: this.scenario.rxPositions }];
    this.linkStates = linkDefs.map((d, i) => {
      const txPos = this.scenario.txPositions;
      for (let a = 0; a < d.nRx; a++) {
        const [x, y, z] = [d.rxPos[3 * a]!, d.rxPos[3 * a + 1]!, d.rxPos[3 * a + 2]!];
        if (!(x >= 0 && x <= room.width && y >= 0 && y <= room.depth && z >= 0 && z <= room.height)) {
          throw new RangeError(`sim: every antenna of ${d.rx?.id ?? 'the rx array'} must be inside the room`);
        }
      }
      let patterns: { tx: ElementPattern; rx: ElementPattern } | null = null;
      if (!ideal) {
        patterns =
          site !== null && this.o.realism.antennaPattern === 'patch'
            ? { tx: facingPatch(site.tx), rx: facingPatch(d.rx!) }
            : arrayPatterns(this.o.realism.antennaPattern, txPos, d.rxPos);
      }
      // Outside the ideal room the static paths are the room scene's (its `base`), not the model's.
      const channelModel = new ChannelModel({
        centreHz,
        subcarriers: this.subcarriers,
        tx: txPos,
        rx: d.rxPos,
        room: ideal ? this.scenario.surfaces() : null,
        los: ideal ? los : false,
        patterns,
      });
      const scene =
        patterns === null
          ? null
          : new RoomScene({
              channel: channelModel,
              scenario: this.scenario,
              settings: this.o.realism,
              patterns,
              seed,
              rateHz,
              lineOfSight: los,
              tx: txPos,
              rx: d.rxPos,
              ...(keepClear ? { keepClear } : {}),
              chainTag: linkStreamTag(i, 6),
              clockTag: linkStreamTag(i, 7),
            });
      // The SNR refers to the link's empty-room channel; in free space without line of sight, to
      // the line of sight the two array centres would have.
      let ref = scene !== null ? scene.staticPower() : channelModel.staticPower();
      if (!(ref > 0)) {
        const c = (a: Float64Array, k: number): number => {
          let s = 0;
          for (let j = k; j < a.length; j += 3) s += a[j]!;
          return s / (a.length / 3);
        };
        const dist = Math.hypot(c(txPos, 0) - c(d.rxPos, 0), c(txPos, 1) - c(d.rxPos, 1), c(txPos, 2) - c(d.rxPos, 2));
        ref = (lambda / (4 * Math.PI * Math.max(dist, 0.1))) ** 2;
      }
      const imp = new Impairments(
        this.o.impairments,
        new Rng(deriveSeed(seed, linkStreamTag(i, 1))),
        new Rng(deriveSeed(seed, linkStreamTag(i, 2))),
        this.subcarriers,
        d.nRx,
        nTx,
        ref,
      );
      const linkSource = d.id === undefined ? sourceId : `${sourceId}#${d.id}`;
      return new Link(d.id, linkSource, d.nRx, nTx, txPos, d.rxPos, channelModel, scene, imp, txPowerDbm);
    });
    this.links = this.linkStates;
    this.channelModel = this.linkStates[0]!.channelModel;
    this.room = this.linkStates[0]!.room;
    this.scat = new Float64Array((MAX_PEOPLE * SCATTERERS_PER_BODY + DOOR_SCATTERERS) * 4);
  }

  /** Sequence number of the last emitted sample; -1 before the first. */
  get seq(): number {
    return this.lastSeq;
  }

  /** Number of frames emitted so far (over every link). */
  get emitted(): number {
    return this.emittedCount;
  }

  /** Number of ticks (packets of each link) simulated so far, received or lost. */
  get packets(): number {
    return this.tick;
  }

  /** 802.11 channel number of the primary 20 MHz channel. */
  get channelNumber(): number {
    return this.o.channel;
  }

  /** Channel bandwidth, MHz. */
  get bandwidthMhz(): number {
    return this.o.bandwidthMhz;
  }

  /**
   * The next received frame with its ground truth. With several links, the frames of a tick come
   * one call each in the site's order, all with the tick's truth (the same people), its events on
   * the first only.
   * @returns the next received sample
   */
  next(): SimSample {
    if (this.queuePos >= this.queue.length) {
      const t = this.nextTick();
      this.queue = t.frames;
      this.queuePos = 0;
      this.queueTruth = t.truth;
    }
    const truth = this.queueTruth!;
    const frame = this.queue[this.queuePos++]!;
    return { frame, truth: this.queuePos === 1 ? truth : { ...truth, events: [] } };
  }

  /**
   * Simulates ticks until at least one link receives its packet and returns that tick: one frame
   * per link that received it and the one ground truth (events since the previous tick returned).
   * A link whose packet was lost has no frame in it. Do not mix with `next()` within a tick.
   * @returns the frames and the truth of the next tick with a frame
   * @throws Error when `next()` has frames of the previous tick still to return
   */
  nextTick(): SimTick {
    if (this.queuePos < this.queue.length) throw new Error('sim: next() has frames of this tick still to return; finish them before nextTick()');
    const o = this.o;
    const dt = 1 / o.rateHz;
    const links = this.linkStates;
    for (;;) {
      const s = this.tick++;
      if (s > 0) this.scenario.step(dt, s / o.rateHz);
      else this.scenario.begin();
      // Events carry the time of the tick that raised them, on the same clock as the truth.
      const ms = this.tickMs(s);
      for (const e of this.scenario.drainEvents()) {
        const ev: TruthEvent = { type: e.type, personId: e.personId, time: ms };
        if (e.activity !== undefined) ev.activity = e.activity;
        this.events.push(ev);
      }
      let received = 0;
      for (const l of links) {
        l.lost = l.imp.packetLost();
        if (!l.lost) received++;
      }
      if (received === 0) continue;
      const count = this.scenario.fillScatterers(this.scat);
      const frames: CsiFrame[] = [];
      for (const l of links) if (!l.lost) frames.push(this.emit(l, s, count));
      const truth = this.truth(s);
      this.emittedCount += frames.length;
      this.lastSeq = s;
      return { frames, truth };
    }
  }

  private tickMs(s: number): number {
    return this.o.startTime + (s * 1000) / this.o.rateHz;
  }

  /** One link's frame of tick s, from the bodies' scatterers in `scat` (count of them). */
  private emit(l: Link, s: number, count: number): CsiFrame {
    const o = this.o;
    if (l.room !== null) {
      // The room rewrites the weights (bodies shadowing each other on this link's paths): a copy.
      l.scat.set(this.scat);
      const n = l.room.prepare(s, l.scat, count);
      l.channelModel.compute(l.scat, n, l.clean, l.room.base);
      l.room.applyChains(l.clean);
    } else {
      l.channelModel.compute(this.scat, count, l.clean);
    }
    const csi = new Float32Array(l.channelModel.size);
    l.imp.apply(l.clean, csi);

    // RSSI from the clean channel power per receive antenna (mean over subcarriers and tx chains).
    const nRx = l.nRx;
    const nTx = l.nTx;
    const nPair = nRx * nTx;
    const clean = l.clean;
    const rssi: number[] = [];
    for (let m = 0; m < nRx; m++) {
      let p = 0;
      for (let k = 0; k < o.nSub; k++) {
        for (let n = 0; n < nTx; n++) {
          const i = 2 * (k * nPair + m * nTx + n);
          p += clean[i]! * clean[i]! + clean[i + 1]! * clean[i + 1]!;
        }
      }
      p = p / (o.nSub * nTx) + l.imp.noisePower;
      rssi.push(p > 0 ? Math.round(o.txPowerDbm + 10 * Math.log10(p)) : NaN);
    }

    const truthMs = this.tickMs(s);
    const clockUs = l.room !== null ? l.room.clockUs(s) : Math.round((s * 1e6) / o.rateHz);
    const frame: CsiFrame = {
      format: 'sim',
      sourceId: l.sourceId,
      environmentId: o.environmentId,
      ...(l.id !== undefined ? { linkId: l.id } : {}),
      index: l.emitted++,
      time: truthMs + l.imp.jitter(1000 / o.rateHz),
      deviceTime: clockUs,
      clockUs,
      seq: s,
      rssi,
      noise: l.noiseDbm,
      channel: o.channel,
      bandwidthMhz: o.bandwidthMhz,
      nRx,
      nTx,
      nSub: o.nSub,
      subcarriers: this.subcarriers,
      csi,
    };
    return frame;
  }

  /** The ground truth of tick s, with the events since the last one. */
  private truth(s: number): GroundTruth {
    const o = this.o;
    const truthMs = this.tickMs(s);
    const cam = this.scenario.camera;
    const persons: TruthPerson[] = [];
    for (const p of this.scenario.persons) {
      if (!p.present) continue;
      const keypoints3d = Float32Array.from(p.body.keypoints);
      const keypoints = new Float32Array(NUM_KEYPOINTS * 2);
      const visible = new Uint8Array(NUM_KEYPOINTS);
      cam.projectKeypoints(keypoints3d, keypoints, visible);
      const tp: TruthPerson = {
        id: p.id,
        activity: p.activity,
        keypoints,
        visible,
        keypoints3d,
        bbox: cam.bbox(keypoints, visible),
        floor: { x: p.body.floorX, y: p.body.floorY },
        velocity: { x: p.vx, y: p.vy },
      };
      // The tick at or after the onset: the tick whose truth carries the fall_start event.
      if (p.fallOnset !== null) tp.fallOnset = this.tickMs(Math.ceil(p.fallOnset * o.rateHz - 1e-6));
      persons.push(tp);
    }
    const truth: GroundTruth = { time: truthMs, seq: s, personCount: persons.length, persons, events: this.events };
    this.events = [];
    return truth;
  }
}

/** A patch element facing where its radio faces. */
function facingPatch(r: RadioConfig): ElementPattern {
  const f = radioFacing(r);
  return elementPattern('patch', f.x, f.y, 0);
}

function round1(x: number): number {
  return Math.round(x * 10) / 10;
}
