/**
 * COCO-17 skeletons on the reference view (keypoints in view pixels, DECISIONS "Data"), each
 * track in its own colour, labelled with its track id, confidence and activity.
 */
import type { Person } from './types.js';

/** COCO-17 keypoint order (DECISIONS "Data"). */
export const KEYPOINTS = [
  'nose', 'left_eye', 'right_eye', 'left_ear', 'right_ear', 'left_shoulder', 'right_shoulder', 'left_elbow', 'right_elbow',
  'left_wrist', 'right_wrist', 'left_hip', 'right_hip', 'left_knee', 'right_knee', 'left_ankle', 'right_ankle',
] as const;

/** The COCO skeleton's bones, as pairs of keypoint indices. */
export const BONES: ReadonlyArray<readonly [number, number]> = [
  [15, 13], [13, 11], [16, 14], [14, 12], [11, 12], [5, 11], [6, 12], [5, 6], [5, 7], [6, 8], [7, 9], [8, 10],
  [1, 2], [0, 1], [0, 2], [1, 3], [2, 4], [3, 5], [4, 6],
];

/** Keypoints below this confidence are not drawn. */
const MIN_KEYPOINT_CONFIDENCE = 0.05;

/**
 * The colour of a track: hues a golden angle apart, so neighbouring ids differ clearly.
 * @param trackId the track id
 * @param alpha opacity 0..1
 */
export function trackColor(trackId: number, alpha = 1): string {
  const hue = Math.round((((trackId * 137.508) % 360) + 360) % 360);
  return `hsla(${hue}, 85%, 62%, ${alpha})`;
}

/**
 * Draws one person: box, bones, joints and a label above the box.
 * @param ctx a context whose units are view pixels
 * @param p the person (Form B)
 * @param viewWidth the view's width in pixels (labels stay inside it)
 * @returns whether anything was drawn (a person outside the view has no box)
 */
export function drawPerson(ctx: CanvasRenderingContext2D, p: Person, viewWidth: number): boolean {
  const color = trackColor(p.track_id);
  const b = p.bounding_box;
  // A person the model places outside the view has no box and nothing to draw.
  if (!(b.width > 0 && b.height > 0)) return false;
  ctx.setLineDash([4, 4]);
  ctx.lineWidth = 1;
  ctx.strokeStyle = trackColor(p.track_id, 0.45);
  ctx.strokeRect(b.x, b.y, b.width, b.height);
  ctx.setLineDash([]);

  // Keypoints by COCO index: the list is in that order, but go by name in case it is not.
  const kp = new Array<{ x: number; y: number } | undefined>(KEYPOINTS.length);
  for (const k of p.keypoints ?? []) {
    const i = KEYPOINTS.indexOf(k.name as (typeof KEYPOINTS)[number]);
    if (i >= 0 && k.visible !== false && k.confidence >= MIN_KEYPOINT_CONFIDENCE && Number.isFinite(k.x) && Number.isFinite(k.y)) kp[i] = k;
  }
  ctx.lineCap = 'round';
  ctx.lineWidth = 3;
  ctx.strokeStyle = color;
  ctx.beginPath();
  for (const [a, c] of BONES) {
    const pa = kp[a];
    const pc = kp[c];
    if (!pa || !pc) continue;
    ctx.moveTo(pa.x, pa.y);
    ctx.lineTo(pc.x, pc.y);
  }
  ctx.stroke();
  ctx.fillStyle = '#fff';
  for (const k of kp) {
    if (!k) continue;
    ctx.beginPath();
    ctx.arc(k.x, k.y, 2.5, 0, Math.PI * 2);
    ctx.fill();
  }

  const label = `#${p.track_id} ${Math.round(p.confidence * 100)}%${p.activity ? ` ${p.activity}` : ''}`;
  ctx.font = '600 12px system-ui, sans-serif';
  const w = ctx.measureText(label).width + 8;
  const x = Math.max(0, Math.min(b.x, viewWidth - w));
  const y = Math.max(0, b.y - 18);
  ctx.fillStyle = 'rgba(10, 14, 20, 0.8)';
  ctx.fillRect(x, y, w, 16);
  ctx.fillStyle = color;
  ctx.fillText(label, x + 4, y + 12);
  return true;
}
