/**
 * COCO-17 skeletons on the reference view (keypoints in view pixels, DECISIONS "Data"), each
 * track in its own colour, labelled with its track id, confidence and activity.
 */
import type { Person } from './types.js';

/** COCO-17 keypoint order (DECISIONS "Data"). */
export const KEYPOINTS = [
  'nose',
  'left_eye',
  'right_eye',
  'left_ear',
  'right_ear',
  'left_shoulder',
  'right_shoulder',
  'left_elbow',
  'right_elbow',
  'left_wrist',
  'right_wrist',
  'left_hip',
  'right_hip',
  'left_knee',
  'right_knee',
  'left_ankle',
  'right_ankle',
] as const;

/** The COCO skeleton's bones, as pairs of keypoint indices. */
export const BONES: ReadonlyArray<readonly [number, number]> = [
  [15, 13],
  [13, 11],
  [16, 14],
  [14, 12],
  [11, 12],
  [5, 11],
  [6, 12],
  [5, 6],
  [5, 7],
  [6, 8],
  [7, 9],
  [8, 10],
  [1, 2],
  [0, 1],
  [0, 2],
  [1, 3],
  [2, 4],
  [3, 5],
  [4, 6],
];

/** Label text size on the screen, CSS pixels, however small the view is drawn. */
const LABEL_CSS_PX = 11;

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
 * Whether the reference view sees a person: `in_view` when the service says, else a box with an
 * area (a service from before `in_view` sent the empty box for a person out of view).
 */
export function inView(p: Person): boolean {
  const b = p.bounding_box;
  return p.in_view !== false && !!b && b.width > 0 && b.height > 0;
}

/**
 * Draws one person as the service sent it: box, bones and joints at the keypoints it sent, and a
 * label above the box. The skeleton is the pose model's keypoints; the activity in the label comes
 * from the activity classifier, so the two can disagree (docs/dashboard.md "Known limits").
 * @param ctx a context whose units are view pixels
 * @param p the person (Form B)
 * @param viewWidth the view's width in pixels (labels stay inside it)
 * @param labels the labels already drawn on this frame (x, y, width): this one moves up until it
 *   overlaps none of them, and is added
 * @param scale CSS pixels per view pixel (labels stay readable on a small screen)
 * @returns whether anything was drawn (a person outside the view has no box, see {@link inView})
 */
export function drawPerson(
  ctx: CanvasRenderingContext2D,
  p: Person,
  viewWidth: number,
  labels: Array<{ x: number; y: number; w: number }> = [],
  scale = 1,
): boolean {
  const color = trackColor(p.track_id);
  const b = p.bounding_box;
  // A person outside the view has no box and nothing to draw there (it is on the floor plan).
  if (!b || !inView(p)) return false;
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
  const font = Math.max(12, LABEL_CSS_PX / scale);
  const lh = font + 4;
  ctx.font = `600 ${font}px system-ui, sans-serif`;
  const w = ctx.measureText(label).width + font * 0.67;
  const x = Math.max(0, Math.min(b.x, viewWidth - w));
  let y = Math.max(0, b.y - lh - 2);
  // People side by side: stack their labels instead of drawing one over the other.
  for (let moved = true; moved;) {
    moved = false;
    for (const l of labels)
      if (x < l.x + l.w && l.x < x + w && y < l.y + lh && l.y < y + lh) {
        y = l.y - lh - 2;
        moved = true;
      }
  }
  labels.push({ x, y, w });
  ctx.fillStyle = 'rgba(10, 14, 20, 0.8)';
  ctx.fillRect(x, y, w, lh);
  ctx.fillStyle = color;
  ctx.fillText(label, x + font / 3, y + font);
  return true;
}
