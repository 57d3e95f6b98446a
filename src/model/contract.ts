/**
 * The model contract: what any pose model dropped in through config `neural_network.model_path`
 * must accept and return. Models are ONNX files run by onnxruntime-node (CPU).
 *
 * Input (one tensor):
 *   `features`  float32 [N, FEATURE_DIM]  one row per CSI window, built by `src/model/features.ts`
 *               (layout, order and normalisation documented there and in docs/model.md).
 * Outputs (all float32; P = the model's person slots, metadata `max_persons`):
 *   `presence`  [N, P]            probability that slot p holds a person (0..1)
 *   `keypoints` [N, P, 17, 3]     COCO-17 x, y normalised to the reference view (0..1, x / width,
 *                                 y / height) and a per-keypoint confidence (0..1)
 *   `boxes`     [N, P, 4]         x, y, width, height normalised to the view (0..1)
 *   `floor`     [N, P, 2]         floor position in metres (x across the room, y in depth)
 *   `densepose` [N, P, 24, 3]     per DensePose part: confidence (0..1), u, v (0..1)
 * Slots are ordered by the model's own rule (ours: by floor x, left to right); the tracker, not
 * the slot order, gives identities.
 *
 * ONNX metadata_props the service reads (all strings): `csipose_contract` (= CONTRACT_VERSION),
 * `model_version`, `feature_dim`, `max_persons`, `window_frames`, `trained_on`.
 */
export const CONTRACT_VERSION = 'csipose-pose-v1';

export const INPUT_FEATURES = 'features';
export const OUTPUT_PRESENCE = 'presence';
export const OUTPUT_KEYPOINTS = 'keypoints';
export const OUTPUT_BOXES = 'boxes';
export const OUTPUT_FLOOR = 'floor';
export const OUTPUT_DENSEPOSE = 'densepose';

export const MODEL_OUTPUTS = [OUTPUT_PRESENCE, OUTPUT_KEYPOINTS, OUTPUT_BOXES, OUTPUT_FLOOR, OUTPUT_DENSEPOSE] as const;

/** Metadata a contract model carries. */
export interface ModelMetadata {
  csipose_contract: string;
  model_version: string;
  feature_dim: number;
  max_persons: number;
  window_frames: number;
  trained_on: string;
}
