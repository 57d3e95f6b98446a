/**
 * The JSON shapes of pose frames and persons on the wire (src/render/frame.ts renders them as
 * records), as the tests read them. Both forms in one type: the fields of the other form are
 * absent. A test narrows a parsed body with a cast to these (`r.body.data as WireFrame`).
 */

export interface WireBox {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface WireKeypoint {
  name: string;
  x: number;
  y: number;
  confidence: number;
  visible: boolean;
}

export interface WirePerson {
  /** Form A. */
  id?: number;
  /** Form B. */
  person_id?: number;
  /** Form B (Form A has `tracking_info.track_id`). */
  track_id?: number;
  confidence: number;
  /** Absent for a person outside the reference view. */
  bounding_box?: WireBox;
  in_view: boolean;
  /** Form A always; Form B when keypoints were asked for. */
  keypoints: WireKeypoint[];
  /** Form A `{ body_parts }`, Form B `{ iuv_image, confidence_map }`. */
  dense_pose?: { body_parts?: unknown[]; iuv_image?: string; confidence_map?: string };
  /** Form A. */
  tracking_info: { track_id: string; track_age: number; velocity: { x: number; y: number } };
  activity?: string;
  location?: { x: number; y: number };
  [field: string]: unknown;
}

export interface WireFrame {
  timestamp: string;
  frame_id: number;
  /** Form B. */
  environment_id?: string;
  processing_time_ms: number;
  persons: WirePerson[];
  metadata: Record<string, unknown>;
  [field: string]: unknown;
}
