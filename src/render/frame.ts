import { DENSE_PART_NAMES, KEYPOINT_NAMES, type PersonPose, type PoseFrame } from '../pose/types.js';
import { isoTime } from '../csi/frame.js';
import { encodePng } from './png.js';
import { confidence, metres, millis, pixels, speed } from '../precision.js';

/** The two response layouts of the spec (DECISIONS "Response forms"). */
export type Form = 'a' | 'b';

/** Keypoints at or above this confidence are `visible`. */
const VISIBLE = 0.3;
/** Side of the per-person IUV raster (as DensePose's 56x56 per-box output). */
const IUV = 56;

export interface PersonRenderOptions {
  includeKeypoints: boolean;
  includeDensePose: boolean;
}

function keypoints(p: PersonPose): Array<Record<string, unknown>> {
  const k = p.keypoints;
  // An anonymised person (privacy.anonymize_data) carries no keypoints.
  if (k.length === 0) return [];
  return KEYPOINT_NAMES.map((name, i) => ({
    name,
    x: pixels(k[3 * i]!),
    y: pixels(k[3 * i + 1]!),
    confidence: confidence(k[3 * i + 2]!),
    visible: k[3 * i + 2]! >= VISIBLE,
  }));
}

/**
 * Whether a person is seen in the reference view: its box has an area. The box is that of its
 * keypoints inside the view (`Camera.bbox`, at least 4 x 4 pixels), so a person with no keypoint
 * in the view (beside it, above or below it, or behind the camera) has the empty box [0, 0, 0, 0],
 * live and as stored. Such a person has no `bounding_box` (an empty one would point at the view's
 * top-left corner, a made-up one at nothing) and carries `in_view: false` in every form
 * (docs/service.md "Reference view").
 */
export function inView(p: PersonPose): boolean {
  const b = p.bbox;
  return b.length >= 4 && b[2]! > 0 && b[3]! > 0 && Number.isFinite(b[0]!) && Number.isFinite(b[1]!) && Number.isFinite(b[2]!) && Number.isFinite(b[3]!);
}

function box(p: PersonPose): Record<string, number> {
  const b = p.bbox;
  return { x: pixels(b[0]!), y: pixels(b[1]!), width: pixels(b[2]!), height: pixels(b[3]!) };
}

/**
 * Limb segments (keypoint a -> b) of the DensePose parts, and a radius as a fraction of the box
 * width. Parts with a front and a back share a segment; the view decides which is seen.
 */
const SEGMENTS: Array<{ front: number; back: number; a: number; b: number; r: number }> = [
  { front: 2, back: 1, a: -1, b: -2, r: 0 }, // torso: shoulder midpoint -> hip midpoint, radius half the shoulder width
  { front: 9, back: 7, a: 12, b: 14, r: 0.09 }, // right upper leg
  { front: 10, back: 8, a: 11, b: 13, r: 0.09 }, // left upper leg
  { front: 13, back: 11, a: 14, b: 16, r: 0.07 }, // right lower leg
  { front: 14, back: 12, a: 13, b: 15, r: 0.07 }, // left lower leg
  { front: 15, back: 17, a: 5, b: 7, r: 0.07 }, // left upper arm
  { front: 16, back: 18, a: 6, b: 8, r: 0.07 }, // right upper arm
  { front: 19, back: 21, a: 7, b: 9, r: 0.06 }, // left lower arm
  { front: 20, back: 22, a: 8, b: 10, r: 0.06 }, // right lower arm
  { front: 3, back: 3, a: 10, b: 10, r: 0.07 }, // right hand
  { front: 4, back: 4, a: 9, b: 9, r: 0.07 }, // left hand
  { front: 5, back: 5, a: 15, b: 15, r: 0.07 }, // left foot
  { front: 6, back: 6, a: 16, b: 16, r: 0.07 }, // right foot
  { front: 23, back: 23, a: 0, b: 4, r: 0.1 }, // right face: nose -> right ear
  { front: 24, back: 24, a: 0, b: 3, r: 0.1 }, // left face: nose -> left ear
];

function point(k: Float32Array, i: number): [number, number, number] {
  if (i === -1) return [(k[15]! + k[18]!) / 2, (k[16]! + k[19]!) / 2, Math.min(k[17]!, k[20]!)];
  if (i === -2) return [(k[33]! + k[36]!) / 2, (k[34]! + k[37]!) / 2, Math.min(k[35]!, k[38]!)];
  return [k[3 * i]!, k[3 * i + 1]!, k[3 * i + 2]!];
}

/**
 * Renders a person's DensePose-style IUV image and confidence map (56x56 over the box) from the
 * estimated skeleton with a capsule body model: each part is a capsule around its limb segment,
 * I = part id, U = position along the segment, V = position across it, confidence = the segment's
 * keypoint confidence times the model's part confidence. It is a rendering of the estimated pose,
 * not a per-pixel surface regression (docs/model.md says so).
 */
export function renderIuv(p: PersonPose): { iuv: Buffer; confidence: Buffer } {
  const k = p.keypoints;
  const [bx, by, bw, bh] = [p.bbox[0]!, p.bbox[1]!, Math.max(p.bbox[2]!, 1), Math.max(p.bbox[3]!, 1)];
  const rgb = new Uint8Array(IUV * IUV * 3);
  const conf = new Uint8Array(IUV * IUV);
  // Facing the view when the nose is seen with confidence.
  const facing = k[2]! >= 0.5;
  for (const s of SEGMENTS) {
    const part = facing ? s.front : s.back;
    const [ax, ay, ac] = point(k, s.a);
    const [cx, cy, cc] = point(k, s.b);
    const partConf = p.densePose ? p.densePose[3 * (part - 1)]! : 1;
    const c = Math.min(ac, cc) * partConf;
    if (!(c > 0.05)) continue;
    const r = s.r > 0 ? s.r * bw : Math.max(Math.abs(k[15]! - k[18]!) / 2, 0.08 * bw);
    const dx = cx - ax;
    const dy = cy - ay;
    const len2 = dx * dx + dy * dy;
    for (let py = 0; py < IUV; py++) {
      const y = by + ((py + 0.5) / IUV) * bh;
      for (let px = 0; px < IUV; px++) {
        const x = bx + ((px + 0.5) / IUV) * bw;
        const t = len2 > 0 ? Math.max(0, Math.min(1, ((x - ax) * dx + (y - ay) * dy) / len2)) : 0;
        const ex = x - (ax + t * dx);
        const ey = y - (ay + t * dy);
        const d2 = ex * ex + ey * ey;
        if (d2 > r * r) continue;
        const i = py * IUV + px;
        const q = Math.round(c * 255);
        if (q <= conf[i]!) continue;
        const across = len2 > 0 ? (ex * -dy + ey * dx) / Math.sqrt(len2) : ex;
        conf[i] = q;
        rgb[3 * i] = part;
        rgb[3 * i + 1] = Math.round(t * 255);
        rgb[3 * i + 2] = Math.round(((across / r + 1) / 2) * 255);
      }
    }
  }
  return { iuv: encodePng(IUV, IUV, 3, rgb), confidence: encodePng(IUV, IUV, 1, conf) };
}

/** Form A `dense_pose.body_parts`: per part its id, name, the model's UV and confidence. */
function bodyParts(p: PersonPose): Array<Record<string, unknown>> {
  const d = p.densePose;
  if (!d) return [];
  return DENSE_PART_NAMES.map((name, i) => ({
    part_id: i + 1,
    part_name: name,
    // U and V run 0..1 over the part: a thousandth, as scores of that range print.
    uv_coordinates: [[confidence(d[3 * i + 1]!), confidence(d[3 * i + 2]!)]],
    confidence: confidence(d[3 * i]!),
  })).filter((b) => (b.confidence as number) > 0);
}

/**
 * One person in the request's form. A person outside the reference view (see {@link inView}) has
 * no `bounding_box` and no Form B `dense_pose`; everything else (keypoints at confidence 0, track,
 * activity, `location`) is there, and `in_view` says which case it is.
 */
export function renderPerson(p: PersonPose, form: Form, o: PersonRenderOptions): Record<string, unknown> {
  const id = personId(p);
  const seen = inView(p);
  if (form === 'a') {
    const out: Record<string, unknown> = {
      id,
      confidence: confidence(p.confidence),
      ...(seen ? { bounding_box: box(p) } : {}),
      in_view: seen,
      keypoints: o.includeKeypoints ? keypoints(p) : [],
      dense_pose: { body_parts: o.includeDensePose ? bodyParts(p) : [] },
      tracking_info: {
        track_id: String(p.trackId ?? id),
        track_age: p.trackAge ?? 0,
        // m/s on the floor (px/s without a floor position, printed alike).
        velocity: { x: speed(p.velocity?.x ?? 0), y: speed(p.velocity?.y ?? 0) },
      },
    };
    if (p.activity) out.activity = p.activity;
    if (p.floor) out.location = { x: metres(p.floor.x), y: metres(p.floor.y) };
    return out;
  }
  const out: Record<string, unknown> = {
    person_id: id,
    track_id: p.trackId ?? id,
    confidence: confidence(p.confidence),
  };
  if (seen) out.bounding_box = box(p);
  out.in_view = seen;
  if (o.includeKeypoints) out.keypoints = keypoints(p);
  // The IUV image is drawn over the box: a person out of view has none to draw over.
  if (o.includeDensePose && seen && p.keypoints.length > 0) {
    const r = renderIuv(p);
    out.dense_pose = { iuv_image: r.iuv.toString('base64'), confidence_map: r.confidence.toString('base64') };
  }
  if (p.activity) out.activity = p.activity;
  if (p.floor) out.location = { x: metres(p.floor.x), y: metres(p.floor.y) };
  return out;
}

export interface FrameRenderOptions extends PersonRenderOptions {
  minConfidence: number;
  /** Only these persons (by their rendered id, see {@link personId}); all when absent. */
  personIds?: readonly number[];
  /** Form A `metadata.router_count`: distinct CSI sources feeding the environment. */
  routerCount: number;
  pipeline: string;
}

/**
 * The id a person is rendered with (Form A `id`, Form B `person_id`): its track id, else its
 * model slot + 1.
 */
export function personId(p: PersonPose): number {
  return p.trackId ?? p.slot + 1;
}

/** Whether a person passes a rendering's confidence and person filters. */
export function selected(p: PersonPose, o: Pick<FrameRenderOptions, 'minConfidence' | 'personIds'>): boolean {
  return p.confidence >= o.minConfidence && (!o.personIds || o.personIds.includes(personId(p)));
}

/**
 * A pose frame around already rendered persons, in a form.
 * @param f the frame
 * @param form the response form
 * @param o router count and pipeline name for the metadata
 * @param persons the persons, rendered in the same form
 */
export function frameBody(f: PoseFrame, form: Form, o: Pick<FrameRenderOptions, 'routerCount' | 'pipeline'>, persons: unknown[]): Record<string, unknown> {
  if (form === 'a') {
    return {
      timestamp: isoTime(f.time),
      frame_id: f.frameId,
      persons,
      processing_time_ms: Math.round(f.processingMs),
      metadata: {
        environment_id: f.environmentId,
        router_count: o.routerCount,
        signal_quality: confidence(f.csiQuality),
        processing_pipeline: o.pipeline,
      },
    };
  }
  return {
    timestamp: isoTime(f.time),
    frame_id: f.frameId,
    environment_id: f.environmentId,
    processing_time_ms: millis(f.processingMs),
    persons,
    metadata: { model_version: f.modelVersion, processing_mode: o.pipeline, csi_quality: confidence(f.csiQuality) },
  };
}

/** A pose frame (latest pose) in the request's form. */
export function renderFrame(f: PoseFrame, form: Form, o: FrameRenderOptions): Record<string, unknown> {
  return frameBody(
    f,
    form,
    o,
    f.persons.filter((p) => selected(p, o)).map((p) => renderPerson(p, form, o)),
  );
}
