import type { PipelineDef } from '../src/engine/pipeline.js';
import { sense } from './sense.js';
import { live } from './live.js';
import { processDef } from './process.js';
import { physics } from './physics.js';
import { physicsLive } from './physicsLive.js';

/** Every named pipeline, by name. */
export const PIPELINES: ReadonlyMap<string, PipelineDef> = new Map([sense, live, processDef, physics, physicsLive].map((p) => [p.name, p]));
