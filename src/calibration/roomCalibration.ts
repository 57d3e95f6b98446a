/**
 * `csipose calibrate` for a v3 refiner: learns the room, not the people (issue 19 item 4). From an
 * installer's recordings of one room it fits, per link of the site:
 *
 * - the empty room's static channel, from a recording of the room with nobody in it (`--empty`,
 *   1-2 minutes): every packet aligned and averaged (`StaticChannel.learn`), anchored at the line
 *   of sight's delay;
 * - the phase of every antenna pair's RF chains, from the sessions' windows in which the camera saw
 *   exactly one person (their floor point under the ankles, `floorFromLabel`): `ChainPhaseFit`
 *   (src/physics/calibration.ts) over the first 85 % of each session's labels.
 *
 * and writes a room model: the refiner's bytes unchanged, with the calibration in its
 * `room_calibration` metadata (ROOM_CALIBRATION_KEY), which the service reads at load and the
 * `floorMap` stage applies from the first packet (no learning of the empty room at start).
 * Each session's labels are split in time: the first 70 % fit the chain phases, the next 15 % check
 * them (the fused map's first candidate against the labelled floor point, without and with them:
 * they are kept only when they bring it closer; where the chains were right already, e.g. the
 * ideal room, a fit of phases that are not there only adds the room's multipath bias), and the last
 * 15 % are held out for the report's figure.
 *
 * The refiner's own weights are not refitted: the model reads front-end features that calibration
 * corrects at their source.
 */
import { readFile, writeFile } from 'node:fs/promises';
import onnxProto from 'onnx-proto';
import { lastValueFrom, type Observable, tap, ignoreElements, defaultIfEmpty } from 'rxjs';
import type { CsiFrame } from '../csi/frame.js';
import type { CaptureFormat } from '../decoders/registry.js';
import { siteLinks, type RadioConfig, type SiteLink } from '../csi/radios.js';
import { CONTRACT_V3, ROOM_CALIBRATION_KEY } from '../model/contract.js';
import { PoseModel } from '../model/runtime.js';
import { viewCamera, type ViewSettings } from '../pose/camera.js';
import { floorFromLabel, LabelIndex, parseLabels, type Label } from '../pose/labels.js';
import { FloorBeamformer, floorGrid, fuseMaps, type FloorGrid } from '../physics/beamform.js';
import { CALIBRATION_VERSION, ChainPhaseFit, chainFactors, roomCalibrationToJson, type LinkCalibration, type RoomCalibration } from '../physics/calibration.js';
import { findCandidates } from '../physics/candidates.js';
import { applyChainCorrection } from '../physics/chains.js';
import { LinkFrontEnd, STALE_MS, type LinkFrontEndOptions } from '../physics/linkFrontEnd.js';
import type { MovingWindow } from '../physics/types.js';
import { SHORT_WINDOW } from '../physics/window.js';
import { parseSource } from '../sources/uri.js';
import { formatSeconds, Progress, type ProgressStream } from './progress.js';

const { onnx } = onnxProto;

/** Share of each session's labels (its end) held out for the report. */
export const HOLD_OUT = 0.15;
/** Share of each session's labels (before the held-out end) that checks whether the fitted chain phases help. */
export const CHECK = 0.15;
/** Fewest labelled one-person windows a link's chain phases are fitted from. */
export const MIN_WINDOWS = 20;

/** One recorded session: its CSI (a capture path, or a source list `file:A?link=rx1 file:B?link=rx2`) and its labels. */
export interface RoomSession {
  csi: string;
  keypoints: string;
}

/** Everything room calibration needs. */
export interface RoomCalibrationOptions {
  /** The v3 refiner to calibrate (its bytes are kept). */
  model: string;
  /** Where the room model goes; its report goes beside it as `.json`. */
  out: string;
  /** A recording of the empty room (a capture path or source list); without it no static channel is stored. */
  empty?: string;
  sessions: RoomSession[];
  /** Format of plain capture paths (default: from the file name). */
  format?: CaptureFormat;
  /** The camera the labels were made in (`environment.view`). */
  view: ViewSettings;
  /** The site (`environment.site.radios`). */
  radios: readonly RadioConfig[];
  /** The room, metres (`environment.site` room_width x room_depth). */
  room: { width: number; depth: number };
  progress?: ProgressStream;
}

/** Per link, what calibration saw. */
export interface LinkReport {
  id: string;
  /** Packets of the empty-room recording. */
  emptyPackets: number;
  /** Labelled one-person windows fitted. */
  windows: number;
  focusBefore: number;
  focusAfter: number;
}

/** What {@link calibrateRoom} did. */
export interface RoomCalibrationResult {
  out: string;
  reportPath: string;
  calibration: RoomCalibration;
  links: LinkReport[];
  /** Held-out windows (one labelled person), and the first candidate's median distance to the label without and with the chain phases, metres. */
  heldOut: { windows: number; before: number; after: number };
  /** The check part: windows, the first candidate's median distance without and with the fitted phases, and whether they were kept. */
  check: { windows: number; before: number; after: number; applied: boolean };
  seconds: number;
}

/** Frames of a capture path or a source list, read as fast as they decode. */
function recording(spec: string, radios: readonly RadioConfig[], format: CaptureFormat | undefined): Observable<CsiFrame> {
  const uri = /^(file|udp|mqtt):/.test(spec.trim()) ? spec : `file:${spec}${format ? `?format=${format}` : ''}`;
  return parseSource(uri).open('frame', { speed: 0, environmentId: 'calibration', radios: () => radios }) as Observable<CsiFrame>;
}

/**
 * Runs `each` over every frame of a recording with the front end of the link it belongs to (frames
 * of links the site lacks are skipped; a link whose layout changes starts a new front end).
 */
async function readLinks(
  spec: string,
  o: RoomCalibrationOptions,
  runs: Map<string, LinkFrontEnd>,
  options: (link: SiteLink) => LinkFrontEndOptions,
  each: (run: LinkFrontEnd, index: number, f: CsiFrame) => void,
): Promise<number> {
  const links = siteLinks(o.radios);
  const index = new Map(links.map((l, i) => [l.id, i]));
  let frames = 0;
  await lastValueFrom(
    recording(spec, o.radios, o.format).pipe(
      tap((f) => {
        const i = f.linkId === undefined ? 0 : (index.get(f.linkId) ?? -1);
        if (i < 0) return;
        const link = links[i]!;
        let run = runs.get(link.id);
        if (!run || !run.fits(f)) {
          run = new LinkFrontEnd(link, f, options(link));
          runs.set(link.id, run);
        }
        frames++;
        each(run, i, f);
      }),
      ignoreElements(),
      defaultIfEmpty(null),
    ),
  );
  return frames;
}

/** Which part of a session a label is in. */
type Part = 'fit' | 'check' | 'held';

/** Labels of a session and the part of each (in time: the first 70 % fit, then CHECK, then HOLD_OUT). */
function sessionLabels(labels: Label[]): { index: LabelIndex; part: Map<Label, Part> } {
  const key = (l: Label) => (Number.isFinite(l.t) ? l.t : l.time);
  const sorted = [...labels].sort((a, b) => key(a) - key(b));
  const held = Math.floor(sorted.length * (1 - HOLD_OUT));
  const check = Math.floor(sorted.length * (1 - HOLD_OUT - CHECK));
  return { index: new LabelIndex(labels), part: new Map(sorted.map((l, i) => [l, i >= held ? 'held' : i >= check ? 'check' : 'fit'])) };
}

const median = (v: number[]): number => {
  if (v.length === 0) return NaN;
  const s = [...v].sort((a, b) => a - b);
  return s[s.length >> 1]!;
};

/**
 * Calibrates the physics front end for one room and writes a room model (module comment).
 * @param o the model, recordings, camera, site and room
 * @returns the calibration, per-link figures and the held-out figure
 * @throws Error for a model that is not a v3 refiner, an unreadable recording or labels file, or a
 *   link with fewer than MIN_WINDOWS labelled one-person windows
 * @example
 * await calibrateRoom({ model: 'models/csipose-refiner.onnx', out: 'room.onnx', empty: 'empty.dat',
 *   sessions: [{ csi: 's1.dat', keypoints: 's1.labels.jsonl' }], view, radios, room: { width: 6, depth: 5 } });
 */
export async function calibrateRoom(o: RoomCalibrationOptions): Promise<RoomCalibrationResult> {
  const t0 = performance.now();
  const progress = new Progress(o.progress ?? { write: () => undefined });
  const bytes = await readFile(o.model);
  const checked = await PoseModel.load(bytes, { thread: 'inline' });
  const contract = checked.metadata.csipose_contract;
  await checked.release();
  if (checked.contract !== 3)
    throw new Error(`${o.model} is a ${contract || `contract v${checked.contract}`} model: room calibration of the front end needs a ${CONTRACT_V3} refiner`);
  const camera = viewCamera(o.view);
  const links = siteLinks(o.radios);
  if (links.length === 0) throw new Error('the site has no link (its radios need one tx and at least one rx)');

  // 1. The empty room.
  const statics = new Map<string, Float32Array>();
  const emptyPackets = new Map<string, number>();
  if (o.empty) {
    const runs = new Map<string, LinkFrontEnd>();
    // Every packet learned (the whole recording is the empty room); the ring is never read.
    await readLinks(
      o.empty,
      o,
      runs,
      () => ({ learnMs: Infinity, gapMs: null }),
      (run, _i, f) => run.push(f.csi, f.time),
    );
    for (const [id, run] of runs) {
      run.staticChannel.anchor();
      statics.set(id, run.staticChannel.channel.slice());
      emptyPackets.set(id, run.packets);
    }
    progress.done(`empty room: ${[...emptyPackets].map(([id, n]) => `${id} ${n} packets`).join(', ') || 'no packets'}`);
  }

  // 2. The chain phases, from the first 70 % of each session's labels; 3. checked on the next 15 %, reported on the last.
  const fits = new Map<string, ChainPhaseFit>();
  const grid = floorGrid({ x0: 0, x1: o.room.width, y0: 0, y1: o.room.depth });
  const inRoom = (p: { x: number; y: number } | null): p is { x: number; y: number } =>
    p !== null && p.x >= 0 && p.y >= 0 && p.x <= o.room.width && p.y <= o.room.depth;
  const labelled = new Map<string, { labels: Label[] }>();
  for (const s of o.sessions) labelled.set(s.keypoints, { labels: parseLabels(await readFile(s.keypoints, 'utf8'), s.keypoints) });

  /** Reads every session; calls `use` for each primary window matched to a one-person label, with every fresh link's window. */
  // The recorded empty room is the static channel (else the window mean is taken away); no learning, and no gap empties the ring.
  const sessionOptions = (link: SiteLink): LinkFrontEndOptions => ({ emptyRoom: statics.get(link.id) ?? null, gapMs: null });
  const pass = async (
    what: string,
    use: (part: Part, point: { x: number; y: number }, windows: Array<[LinkFrontEnd, MovingWindow]>) => void,
  ): Promise<void> => {
    for (const [k, s] of o.sessions.entries()) {
      const { index, part } = sessionLabels(labelled.get(s.keypoints)!.labels);
      const runs = new Map<string, LinkFrontEnd>();
      let first = NaN;
      const frames = await readLinks(s.csi, o, runs, sessionOptions, (run, i, f) => {
        if (Number.isNaN(first)) first = f.time;
        run.push(f.csi, f.time);
        if (i !== 0) return;
        const w = run.take();
        if (!w) return;
        // The label nearest the window's middle.
        const period = run.packets > 1 ? (f.time - run.firstTime) / (run.packets - 1) : 10;
        const mid = w.time - (SHORT_WINDOW / 2) * period;
        const label = index.nearest((mid - first) / 1000, mid);
        if (!label || label.people.length !== 1) return;
        const point = floorFromLabel(label.people[0]!.keypoints, camera);
        if (!inRoom(point)) return;
        const ws: Array<[LinkFrontEnd, MovingWindow]> = [[run, w]];
        for (const other of runs.values()) {
          if (other === run || !(w.time - other.lastTime <= STALE_MS)) continue;
          const ow = other.latest();
          if (ow) ws.push([other, ow]);
        }
        use(part.get(label)!, point, ws);
      });
      progress.update(`${what}: session ${k + 1}/${o.sessions.length}, ${frames} packets`, true);
    }
  };

  await pass('chain phases', (part, p, ws) => {
    if (part !== 'fit') return;
    for (const [run, w] of ws) {
      let fit = fits.get(run.link.id);
      if (!fit || fit.geometry.frequencies.length !== w.nSub || fit.geometry.nRx !== w.nRx || fit.geometry.nTx !== w.nTx) {
        fit = new ChainPhaseFit(run.geometry);
        fits.set(run.link.id, fit);
      }
      fit.add(w, p.x, p.y);
    }
  });
  const calLinks: LinkCalibration[] = [];
  const reports: LinkReport[] = [];
  for (const link of links) {
    const fit = fits.get(link.id);
    if (!fit) continue;
    if (fit.windows < MIN_WINDOWS)
      throw new Error(
        `link ${link.id}: only ${fit.windows} windows in which the camera saw exactly one person (at least ${MIN_WINDOWS}): record more minutes with one person walking through the room`,
      );
    const r = fit.fit();
    const g = fit.geometry;
    calLinks.push({
      id: link.id,
      subcarriers: g.subcarriers,
      nRx: g.nRx,
      nTx: g.nTx,
      chainPhases: r.phases,
      staticChannel: statics.get(link.id) ?? null,
      windows: fit.windows,
      focusBefore: r.focusBefore,
      focusAfter: r.focusAfter,
    });
    reports.push({ id: link.id, emptyPackets: emptyPackets.get(link.id) ?? 0, windows: fit.windows, focusBefore: r.focusBefore, focusAfter: r.focusAfter });
  }
  if (calLinks.length === 0)
    throw new Error(
      `no window in which the camera saw exactly one person on the site's links (${links.map((l) => l.id).join(', ')}): check the labels' times and the links of the recordings`,
    );
  progress.done(
    `chain phases: ${reports.map((r) => `${r.id} ${r.windows} windows, focus ${r.focusBefore.toFixed(3)} -> ${r.focusAfter.toFixed(3)}`).join('; ')}`,
  );

  const factors = new Map(calLinks.map((c) => [c.id, chainFactors(c.chainPhases)]));
  const beamformers = new Map<string, { bf: FloorBeamformer; map: Float32Array }>();
  const maps: Float32Array[] = [];
  const fused = new Float32Array(grid.size);
  const firstCandidate = (ws: Array<[LinkFrontEnd, MovingWindow]>, g: FloorGrid): { x: number; y: number } | null => {
    maps.length = 0;
    for (const [run, w] of ws) {
      let b = beamformers.get(run.link.id);
      if (!b || b.bf.nSub !== w.nSub || b.bf.nRx !== w.nRx || b.bf.nTx !== w.nTx) {
        b = { bf: new FloorBeamformer(run.geometry, g), map: new Float32Array(g.size) };
        beamformers.set(run.link.id, b);
      }
      b.bf.beamform(w, b.map);
      maps.push(b.map);
    }
    fuseMaps(maps, fused);
    return findCandidates(fused, g, { maxCandidates: 1 })[0] ?? null;
  };
  const dist = { check: { before: [] as number[], after: [] as number[] }, held: { before: [] as number[], after: [] as number[] } };
  await pass('check and held-out', (part, p, ws) => {
    if (part === 'fit') return;
    const c0 = firstCandidate(ws, grid);
    for (const [run, w] of ws) {
      const f = factors.get(run.link.id);
      if (f && f.length === 2 * w.nRx * w.nTx) applyChainCorrection(w, f);
    }
    const c1 = firstCandidate(ws, grid);
    dist[part].before.push(c0 ? Math.hypot(c0.x - p.x, c0.y - p.y) : Infinity);
    dist[part].after.push(c1 ? Math.hypot(c1.x - p.x, c1.y - p.y) : Infinity);
  });
  const check = { windows: dist.check.before.length, before: median(dist.check.before), after: median(dist.check.after), applied: false };
  // Kept only when they bring the peak closer on the check part (no check windows: kept, as fitted).
  check.applied = check.windows === 0 || check.after < check.before;
  if (!check.applied)
    for (let i = 0; i < calLinks.length; i++) calLinks[i] = { ...calLinks[i]!, chainPhases: new Float64Array(calLinks[i]!.chainPhases.length) };
  progress.done(
    `check windows: ${check.windows}, first candidate ${check.before.toFixed(2)} -> ${check.after.toFixed(2)} m with the fitted chain phases: ${check.applied ? 'kept' : 'not kept (the chains are taken as right)'}`,
  );
  const held = dist.held;
  const heldOut = { windows: held.before.length, before: median(held.before), after: median(check.applied ? held.after : held.before) };
  progress.done(
    `held-out windows: ${heldOut.windows}, first candidate ${heldOut.before.toFixed(2)} -> ${heldOut.after.toFixed(2)} m from the labelled person (median)`,
  );

  // 4. The room model: the refiner's bytes with the calibration in its metadata.
  const calibration: RoomCalibration = { version: CALIBRATION_VERSION, created: new Date().toISOString(), links: calLinks };
  const model = onnx.ModelProto.decode(bytes);
  const props = (model.metadataProps ?? []).filter((p) => p.key !== ROOM_CALIBRATION_KEY && p.key !== 'model_version');
  const version = (model.metadataProps ?? []).find((p) => p.key === 'model_version')?.value ?? '';
  props.push(
    { key: 'model_version', value: `${version.replace(/\+room$/, '')}+room` },
    { key: ROOM_CALIBRATION_KEY, value: roomCalibrationToJson(calibration) },
  );
  model.metadataProps = props.map((p) => onnx.StringStringEntryProto.create(p));
  const outBytes = onnx.ModelProto.encode(model).finish();
  await writeFile(o.out, outBytes);
  // What the service will load: refused here rather than at its start.
  const back = await PoseModel.load(o.out, { thread: 'inline' });
  await back.release();
  const seconds = (performance.now() - t0) / 1000;
  const reportPath = o.out.replace(/\.onnx$/i, '') + '.json';
  const report = {
    model: o.model,
    out: o.out,
    created: calibration.created,
    sessions: o.sessions,
    empty: o.empty ?? null,
    links: reports.map((l) => ({ id: l.id, empty_packets: l.emptyPackets, windows: l.windows, focus_before: l.focusBefore, focus_after: l.focusAfter })),
    check: { windows: check.windows, first_candidate_median_m: { before: check.before, after: check.after }, chain_phases_applied: check.applied },
    held_out: { windows: heldOut.windows, first_candidate_median_m: { before: heldOut.before, after: heldOut.after } },
    seconds,
  };
  await writeFile(reportPath, JSON.stringify(report, null, 2) + '\n');
  progress.done(`room model -> ${o.out} in ${formatSeconds(seconds)}`);
  return { out: o.out, reportPath, calibration, links: reports, heldOut, check, seconds };
}
