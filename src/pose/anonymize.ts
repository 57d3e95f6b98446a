import type { PersonPose, PoseFrame } from './types.js';

const NONE = new Float32Array(0);

/**
 * A pose frame without what describes a body (config `privacy.anonymize_data`): each person keeps
 * its box, floor position, confidence, track and activity, and loses its keypoints and dense
 * pose, which are neither stored nor served. The alerts and activities computed from them before
 * this step stay.
 * @param f the frame (not modified)
 * @returns a new frame with new persons
 * @example anonymize(frame).persons[0].keypoints.length // 0
 */
export function anonymize(f: PoseFrame): PoseFrame {
  return { ...f, persons: f.persons.map(anonymousPerson) };
}

function anonymousPerson(p: PersonPose): PersonPose {
  const { densePose: _dense, ...rest } = p;
  return { ...rest, keypoints: NONE };
}
