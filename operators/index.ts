/**
 * Every operator of this folder as the pipeline registry lists it. The registry itself, operators
 * and named pipelines together, is pipelines/index.ts: operators know no pipeline.
 */
import type { OperatorSpec } from '../src/engine/spec.js';
import { decoderSpecs } from './decode.js';
import { spec as links } from './links.js';
import { spec as sanitize } from './sanitizePhase.js';
import { spec as hampel } from './hampel.js';
import { spec as normalize } from './normalizeAmplitude.js';
import { spec as conj } from './conjugateMultiply.js';
import { spec as resample } from './resample.js';
import { spec as window } from './slidingWindow.js';
import { spec as doppler } from './doppler.js';
import { spec as conflate } from './conflate.js';
import { spec as track } from './track.js';
import { spec as activity } from './activity.js';
import { spec as alerts } from './alerts.js';
import { spec as features } from './features.js';
import { spec as infer } from './infer.js';
import { spec as floorMap } from './floorMap.js';
import { spec as refine } from './refine.js';

/**
 * Every operator a pipeline string can name, in the order `csipose operators` lists them. The
 * decoder stages come first, one per capture format of src/decoders/registry.ts when this loads.
 */
export const OPERATORS: readonly OperatorSpec[] = [
  ...decoderSpecs(),
  links,
  sanitize,
  hampel,
  normalize,
  conj,
  resample,
  window,
  doppler,
  conflate,
  features,
  infer,
  track,
  activity,
  alerts,
  floorMap,
  refine,
];
