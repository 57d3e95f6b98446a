/**
 * The shapes the dashboard reads, as the interface sends them (../shared/spec and docs/service.md):
 * Form B pose frames and system status, the WebSocket messages, and the canonical configuration
 * (Form A `GET /config`, the names of `GET /config/schema`).
 */
import type { ServiceConfig } from '../../src/config/schema.js';
import type { ViewSettings } from '../../src/pose/camera.js';

export type Role = 'viewer' | 'operator' | 'admin';
export type Severity = 'low' | 'medium' | 'high' | 'critical';

export interface Point {
  x: number;
  y: number;
}

export interface Keypoint {
  name: string;
  x: number;
  y: number;
  confidence: number;
  visible: boolean;
}

/** A person of a Form B pose frame. */
export interface Person {
  person_id: number;
  track_id: number;
  confidence: number;
  /** Absent for a person outside the reference view (docs/service.md "Reference view"). */
  bounding_box?: { x: number; y: number; width: number; height: number };
  /** Whether the reference view sees the person (older services do not say: then by the box). */
  in_view?: boolean;
  keypoints?: Keypoint[];
  activity?: string;
  /** Metres on the floor plan, when the model gives a floor position. */
  location?: Point;
}

/** `pose_update.data` plus the message's timestamp (the last CSI frame behind the estimate). */
export interface PoseFrame {
  timestamp: string;
  frame_id: number;
  environment_id: string;
  processing_time_ms: number;
  persons: Person[];
  metadata: Record<string, unknown>;
}

/** The WebSocket `alert` message. */
export interface AlertMessage {
  alert_id: string;
  timestamp: string;
  alert_type: string;
  severity: Severity;
  data: {
    person_id: number | null;
    track_id?: number | null;
    environment_id?: string;
    location: Point | null;
    confidence: number;
    zone?: string;
    metadata?: Record<string, unknown>;
  };
  actions_required: string[];
}

/** `system_status.status` of the WebSocket. */
export interface StreamStatus {
  processing_fps: number;
  pose_fps: number;
  active_persons: number;
  active_tracks: number;
  system_health: string;
  state: string;
  session_id: string | null;
  average_latency_ms: number;
}

/** An activity event of `GET /analytics/events`. */
export interface ActivityEvent {
  event_id: string;
  type: string;
  severity: Severity;
  timestamp: string;
  person_id: number | null;
  track_id: number | null;
  confidence: number | null;
  location: Point | null;
  metadata: Record<string, unknown> | null;
  zone?: string;
  actions_taken: string[];
}

export interface Zone {
  id: string;
  name?: string;
  polygon: Array<[number, number]>;
  severity?: Severity;
}

/** `environment.view`: the service's own type (src/pose/camera.ts). */
export type { ViewSettings };

/** `environment.site`: the service's own type (src/config/schema.ts). */
export type SiteSettings = ServiceConfig['environment']['site'];

/** The part of the canonical configuration the live view draws from. */
export interface Config {
  environment: { id: string; name: string; view: ViewSettings; zones: Zone[]; site: SiteSettings };
  [group: string]: unknown;
}

/** `GET /pose/floor-map` (docs/service.md "Floor map"): the physics front end's latest map, reduced for display. */
export interface FloorMapResource {
  environment_id: string;
  /** The primary link's last packet in the map's window (server clock). */
  timestamp: string;
  source_id: string;
  /** The links in the map, primary first. */
  links: string[];
  /** Share of the site's links in the map, 0..1. */
  quality: number;
  /** Floor point (ix, iy) is at (x0 + ix cell, y0 + iy cell), metres. */
  grid: { x0: number; y0: number; cell: number; nx: number; ny: number; heights: number[] };
  /** The map's largest value, before normalisation. */
  max_power: number;
  /** Base64 of nx * ny bytes: byte iy * nx + ix is the largest power over the heights there, 0..255 of max_power. */
  floor: string;
  /** Candidate people, strongest first: metres, and power as a share of max_power. */
  candidates: Array<{ x: number; y: number; power: number }>;
}
