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
 * - Not modelled, even in 'room' (a model trained here will meet these only on real data): paths
 *   that bounce off a wall and a body, antenna coupling, the hardware's own frequency response,
 *   camera occlusion (a keypoint is "visible" when it is in the field of view), clothing and body
 *   shape beyond height.
 */

import type { CsiFrame } from '../csi/frame.js';
import { ChannelModel, SPEED_OF_LIGHT } from './channel.js';
import {
  IMPAIRMENT_DEFAULTS,
  Impairments,
  resolveImpairments,
  type ImpairmentOptions,
  type ImpairmentSettings,
} from './impairments.js';
import { isIdeal, resolveRealism, type RealismOptions, type RealismPreset, type RealismSettings } from './realism.js';
import { deriveSeed, Rng } from './rng.js';
import { arrayPatterns, DOOR_SCATTERERS, RoomScene } from './room.js';
import { MAX_PEOPLE, Scenario, type Activity, type PersonSpec, type ScenarioOptions } from './scenario.js';
import { NUM_KEYPOINTS, SCATTERERS_PER_BODY } from './skeleton.js';

/** Supported subcarrier layouts (subcarrier count). */
export type SubcarrierLayout = 30 | 56 | 114;

function range(from: number, to: number, step: number): number[] {
  const out: number[] = [];
  for (let i = from; i <= to; i += step) out.push(i);
  return out;
}

/**
 * Subcarrier index tables, shared by every frame of a layout (do not modify):
 * - 30: Intel 5300 grouping at 20 MHz: -28, -26, ..., -2, -1, 1, 3, ..., 27, 28;
 * - 56: every data and pilot subcarrier at 20 MHz: -28..-1, 1..28;
 * - 114: every data and pilot subcarrier at 40 MHz: -58..-2, 2..58.
 */
export const SUBCARRIERS: Readonly<Record<SubcarrierLayout, Int16Array>> = Object.freeze({
  30: Int16Array.from([...range(-28, -2, 2), -1, ...range(1, 27, 2), 28]),
  56: Int16Array.from([...range(-28, -1, 1), ...range(1, 28, 1)]),
  114: Int16Array.from([...range(-58, -2, 1), ...range(2, 58, 1)]),
});

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
  type: 'fall_start' | 'fall_end' | 'activity_change';
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

/** Resolved options. */
interface Resolved {
  seed: number;
  rateHz: number;
  band: '2.4' | '5';
  nSub: SubcarrierLayout;
  nRx: number;
  nTx: number;
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
 */
export class CsiSimulator {
  readonly scenario: Scenario;
  readonly channelModel: ChannelModel;
  readonly subcarriers: Int16Array;
  /** Centre frequency (subcarrier index 0), Hz. */
  readonly centreHz: number;
  readonly rateHz: number;
  /** The non-ideal room (realism other than 'ideal'); null in the ideal room. */
  readonly room: RoomScene | null;
  private readonly o: Resolved;
  private readonly imp: Impairments;
  private readonly scat: Float64Array;
  private readonly clean: Float64Array;
  private readonly noiseDbm: number;
  private tick = 0;
  private emittedCount = 0;
  private lastSeq = -1;
  private events: TruthEvent[] = [];

  /**
   * @param options see SimOptions; every field is optional
   * @throws RangeError on invalid options
   */
  constructor(options: SimOptions = {}) {
    const seed = options.seed ?? SIM_DEFAULTS.seed;
    const rateHz = options.rateHz ?? SIM_DEFAULTS.rateHz;
    const band = options.band ?? SIM_DEFAULTS.band;
    const nSub = options.nSub ?? SIM_DEFAULTS.nSub;
    const nRx = options.nRx ?? SIM_DEFAULTS.nRx;
    const nTx = options.nTx ?? SIM_DEFAULTS.nTx;
    if (!Number.isFinite(seed)) throw new RangeError('sim: seed must be a finite number');
    if (!(rateHz > 0 && rateHz <= 10_000)) throw new RangeError('sim: rateHz must be in (0, 10000]');
    if (band !== '2.4' && band !== '5') throw new RangeError("sim: band must be '2.4' or '5'");
    if (!(nSub in SUBCARRIERS)) throw new RangeError('sim: nSub must be 30, 56 or 114');
    for (const [k, v] of [['nRx', nRx], ['nTx', nTx]] as const) {
      if (!(Number.isInteger(v) && v >= 1 && v <= 4)) throw new RangeError(`sim: ${k} must be an integer 1..4`);
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
    this.o = {
      seed,
      rateHz,
      band,
      nSub,
      nRx,
      nTx,
      startTime,
      environmentId: options.environmentId ?? SIM_DEFAULTS.environmentId,
      sourceId: options.sourceId ?? SIM_DEFAULTS.sourceId,
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

    this.scenario = new Scenario(options.scenario ?? {}, options.people ?? SIM_DEFAULTS.people, seed, lambda, nTx, nRx);
    const ideal = isIdeal(this.o.realism);
    const los = options.lineOfSight ?? true;
    const patterns = ideal ? null : arrayPatterns(this.o.realism.antennaPattern, this.scenario.txPositions, this.scenario.rxPositions);
    // Outside the ideal room the static paths are the room scene's (its `base`), not the model's.
    this.channelModel = new ChannelModel({
      centreHz,
      subcarriers: this.subcarriers,
      tx: this.scenario.txPositions,
      rx: this.scenario.rxPositions,
      room: ideal ? this.scenario.surfaces() : null,
      los: ideal ? los : false,
      patterns,
    });
    this.room =
      patterns === null
        ? null
        : new RoomScene({ channel: this.channelModel, scenario: this.scenario, settings: this.o.realism, patterns, seed, rateHz, lineOfSight: los });
    this.scat = new Float64Array((MAX_PEOPLE * SCATTERERS_PER_BODY + DOOR_SCATTERERS) * 4);
    this.clean = new Float64Array(this.channelModel.size);

    // The SNR refers to the empty-room channel; in free space without line of sight, to the line of
    // sight the two array centres would have.
    let ref = this.room !== null ? this.room.staticPower() : this.channelModel.staticPower();
    if (!(ref > 0)) {
      const t = this.scenario.txPositions;
      const r = this.scenario.rxPositions;
      const c = (a: Float64Array, i: number): number => {
        let s = 0;
        for (let k = i; k < a.length; k += 3) s += a[k]!;
        return s / (a.length / 3);
      };
      const d = Math.hypot(c(t, 0) - c(r, 0), c(t, 1) - c(r, 1), c(t, 2) - c(r, 2));
      ref = (lambda / (4 * Math.PI * Math.max(d, 0.1))) ** 2;
    }
    this.imp = new Impairments(
      this.o.impairments,
      new Rng(deriveSeed(seed, 1)),
      new Rng(deriveSeed(seed, 2)),
      this.subcarriers,
      nRx,
      nTx,
      ref,
    );
    this.noiseDbm = this.imp.noisePower > 0 ? round1(txPowerDbm + 10 * Math.log10(this.imp.noisePower)) : NaN;
  }

  /** Sequence number of the last emitted sample; -1 before the first. */
  get seq(): number {
    return this.lastSeq;
  }

  /** Number of samples emitted so far. */
  get emitted(): number {
    return this.emittedCount;
  }

  /** Number of packets simulated so far (emitted plus lost). */
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
   * Simulates ticks until a packet is received and returns it with its ground truth.
   * @returns the next received sample
   */
  next(): SimSample {
    const o = this.o;
    const dt = 1 / o.rateHz;
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
      if (this.imp.packetLost()) continue;
      return this.emit(s);
    }
  }

  private tickMs(s: number): number {
    return this.o.startTime + (s * 1000) / this.o.rateHz;
  }

  private emit(s: number): SimSample {
    const o = this.o;
    let count = this.scenario.fillScatterers(this.scat);
    if (this.room !== null) {
      count = this.room.prepare(s, this.scat, count);
      this.channelModel.compute(this.scat, count, this.clean, this.room.base);
      this.room.applyChains(this.clean);
    } else {
      this.channelModel.compute(this.scat, count, this.clean);
    }
    const csi = new Float32Array(this.channelModel.size);
    this.imp.apply(this.clean, csi);

    // RSSI from the clean channel power per receive antenna (mean over subcarriers and tx chains).
    const nPair = o.nRx * o.nTx;
    const rssi: number[] = [];
    for (let m = 0; m < o.nRx; m++) {
      let p = 0;
      for (let k = 0; k < o.nSub; k++) {
        for (let n = 0; n < o.nTx; n++) {
          const i = 2 * (k * nPair + m * o.nTx + n);
          p += this.clean[i]! * this.clean[i]! + this.clean[i + 1]! * this.clean[i + 1]!;
        }
      }
      p = p / (o.nSub * o.nTx) + this.imp.noisePower;
      rssi.push(p > 0 ? Math.round(o.txPowerDbm + 10 * Math.log10(p)) : NaN);
    }

    const truthMs = this.tickMs(s);
    const clockUs = this.room !== null ? this.room.clockUs(s) : Math.round((s * 1e6) / o.rateHz);
    const frame: CsiFrame = {
      format: 'sim',
      sourceId: o.sourceId,
      environmentId: o.environmentId,
      index: this.emittedCount,
      time: truthMs + this.imp.jitter(1000 / o.rateHz),
      deviceTime: clockUs,
      clockUs,
      seq: s,
      rssi,
      noise: this.noiseDbm,
      channel: o.channel,
      bandwidthMhz: o.bandwidthMhz,
      nRx: o.nRx,
      nTx: o.nTx,
      nSub: o.nSub,
      subcarriers: this.subcarriers,
      csi,
    };

    const cam = this.scenario.camera;
    const persons: TruthPerson[] = this.scenario.persons.map((p) => {
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
      return tp;
    });
    const truth: GroundTruth = { time: truthMs, seq: s, personCount: persons.length, persons, events: this.events };
    this.events = [];
    this.emittedCount++;
    this.lastSeq = s;
    return { frame, truth };
  }
}

function round1(x: number): number {
  return Math.round(x * 10) / 10;
}
