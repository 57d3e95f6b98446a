import type { PipelineDef } from '../src/engine/pipeline.js';
import { sense } from './sense.js';

/** Every named pipeline, by name. */
export const PIPELINES: ReadonlyMap<string, PipelineDef> = new Map([sense].map((p) => [p.name, p]));
