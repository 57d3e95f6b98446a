/**
 * Every named pipeline, and the registry pipeline strings are built from: the operators of
 * operators/index.ts and these pipelines. Pipelines compose operators, so the registry lives here,
 * above both.
 */
import type { PipelineDef, Registry } from '../src/engine/pipeline.js';
import { OPERATORS } from '../operators/index.js';
import { sense } from './sense.js';
import { live } from './live.js';
import { processDef } from './process.js';
import { physics } from './physics.js';
import { physicsLive } from './physicsLive.js';

/** Every named pipeline, by name. */
export const PIPELINES: ReadonlyMap<string, PipelineDef> = new Map([sense, live, processDef, physics, physicsLive].map((p) => [p.name, p]));

/** The registry the CLI and the service build pipelines from: every operator and every named pipeline. */
export const registry: Registry = {
  operators: new Map(OPERATORS.map((o) => [o.name, o])),
  pipelines: PIPELINES,
};
