/**
 * Pose estimates as they flow through the live pipeline: the model's detections (`infer`), then
 * tracks (`track`), activities (`activity`) and alerts (`alerts`) are added to the same objects.
 * Keypoints and boxes are pixels of the environment's reference view (config `environment.view`,
 * default 640x480); floor positions are metres on the floor plan.
 */

/** COCO-17, in this order (DECISIONS "Data"). */
export const KEYPOINT_NAMES = [
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
export const N_KEYPOINTS = 17;

/** The 24 DensePose body parts, part_id 1..24 in this order. */
export const DENSE_PART_NAMES = [
  'torso_back',
  'torso_front',
  'right_hand',
  'left_hand',
  'left_foot',
  'right_foot',
  'right_upper_leg_back',
  'left_upper_leg_back',
  'right_upper_leg_front',
  'left_upper_leg_front',
  'right_lower_leg_back',
  'left_lower_leg_back',
  'right_lower_leg_front',
  'left_lower_leg_front',
  'left_upper_arm_front',
  'right_upper_arm_front',
  'left_upper_arm_back',
  'right_upper_arm_back',
  'left_lower_arm_front',
  'right_lower_arm_front',
  'left_lower_arm_back',
  'right_lower_arm_back',
  'right_face',
  'left_face',
] as const;
export const N_DENSE_PARTS = 24;

export type Activity = 'standing' | 'sitting' | 'lying' | 'walking' | 'falling';
/**
 * The service's activities, in order. A contract v2 model's `activity` output and a person's
 * `modelActivity.probabilities` follow this order (`MODEL_ACTIVITIES` in `src/model/contract.ts`
 * is this list).
 */
export const ACTIVITIES: readonly Activity[] = ['standing', 'sitting', 'lying', 'walking', 'falling'];

/** Per-track figures (spec Track `statistics`). */
export interface TrackStats {
  /** Metres travelled on the floor plan (pixels of the view when no floor position is known). */
  movementDistance: number;
  /** Mean speed over the track's life, same unit per second. */
  averageSpeed: number;
  /** Seconds spent below the moving-speed threshold. */
  timeStationary: number;
  timeMoving: number;
}

/** One person in one pose frame. */
export interface PersonPose {
  /** Model output slot (0..max_persons-1), or the index in a submitted result. */
  slot: number;
  /** Presence confidence 0..1. */
  confidence: number;
  /** 17 x (x, y, confidence), pixels of the reference view. */
  keypoints: Float32Array;
  /** x, y, width, height in pixels. */
  bbox: Float32Array;
  /** Floor position in metres (x across the room, y in depth), when the model gives one. */
  floor?: { x: number; y: number };
  /** 24 x (confidence, u, v): per DensePose part, its confidence and UV (0..1) coordinates. */
  densePose?: Float32Array;
  /** 17 x (x, y, z): the skeleton in room metres (models of contract v2). */
  keypoints3d?: Float32Array;
  /** What a v2 model says the person is doing (the activity operator smooths it over the track). */
  modelActivity?: { activity: Activity; confidence: number; probabilities: Float32Array };
  /** Set by the tracker. */
  trackId?: number;
  trackAge?: number;
  /** Floor velocity (m/s), or view velocity (px/s) when no floor position is known. */
  velocity?: { x: number; y: number };
  /** Set by the tracker on a person not detected in this frame, reported as last seen (`holdFrames`). */
  held?: boolean;
  /** Set by the activity operator. */
  activity?: Activity;
  activityConfidence?: number;
}

/** One pose estimate for one environment at one time. */
export interface PoseFrame {
  frameId: number;
  /** Epoch ms of the last CSI frame that went into this estimate. */
  time: number;
  sourceId: string;
  environmentId: string;
  persons: PersonPose[];
  /** Wall-clock ms from the last CSI frame's arrival to this estimate leaving inference. */
  processingMs: number;
  modelVersion: string;
  /** 0..1 estimate of the CSI quality behind this frame (packet loss, SNR). */
  csiQuality: number;
  /** Alerts raised at this frame (by the `alerts` operator). */
  alerts?: PoseAlert[];
  /** Activity events recorded at this frame (falls, recoveries, activity changes, intrusions). */
  events?: ActivityEvent[];
  /** v2 models: probability that someone began to fall in the last few seconds (contract `fall`). */
  fallProbability?: number;
  /**
   * The probability of falling from which the model that made this frame means a fall (its
   * `fall_trigger` metadata): what the activity and alerts operators compare `fallProbability` and
   * each person's P(falling) with. Absent: FALL_TRIGGER (src/pose/activityLabeller.ts).
   */
  fallTrigger?: number;
}

/** An activity event (spec "Activity event", `/analytics/events`). */
export interface ActivityEvent {
  eventId: string;
  type: 'fall_detection' | 'fall_recovery' | 'inactivity' | 'intrusion' | 'activity_change';
  severity: AlertSeverity;
  time: number;
  environmentId: string;
  personId: number;
  trackId: number;
  confidence: number;
  location: { x: number; y: number };
  /** e.g. fall_duration, impact_severity, recovery_detected, from, to, zone. */
  metadata: Record<string, unknown>;
  actionsTaken: string[];
}

export type AlertSeverity = 'low' | 'medium' | 'high' | 'critical';

/** An alert (WebSocket `alert`) and activity event (`/analytics/events`) raised by the alerts operator. */
export interface PoseAlert {
  alertId: string;
  type: 'fall_detection' | 'inactivity' | 'intrusion';
  severity: AlertSeverity;
  time: number;
  environmentId: string;
  personId: number;
  trackId: number;
  confidence: number;
  /** Metres on the floor plan. */
  location: { x: number; y: number };
  /** Zone id for intrusions. */
  zone?: string;
  metadata: Record<string, unknown>;
  actionsRequired: string[];
}
