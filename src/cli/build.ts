/**
 * The command line's pipeline builder: a `SOURCE | stage ... | SINK` string (`csipose pipe`,
 * `csipose run`) into a source (src/sources/uri.ts), operator stages (src/engine/pipeline.ts over
 * the registry of pipelines/index.ts) and one of the command line's sinks (src/cli/sinks/). It
 * lives with the command line because it is the one place that composes all three; the engine
 * below it knows only operators and pipelines.
 */
import type { Observable, SchedulerLike } from 'rxjs';
import { PipelineError, composeStages, resolveStages, splitStages, suggest, type Registry, type ResolvedStage, type StageText } from '../engine/pipeline.js';
import type { StreamKind } from '../engine/spec.js';
import { parseSource, SourceError, type SourceContext, type SourceDef } from '../sources/uri.js';
import { SINKS, type SinkSpec } from './sinks/index.js';
import { ParamError, resolveParams } from '../engine/params.js';
import type { ParamValues } from '../engine/spec.js';

/** A pipeline string turned into parts that are ready to run. */
export interface BuiltPipeline {
  readonly source: SourceDef;
  readonly sourceKind: 'bytes' | 'frame';
  readonly stages: readonly ResolvedStage[];
  readonly output: StreamKind;
  readonly sink?: { spec: SinkSpec; params: ParamValues };
  /** Opens the source and applies every stage. */
  open(ctx?: SourceContext & { scheduler?: SchedulerLike }): Observable<unknown>;
}

/**
 * Builds `SOURCE | stage | stage ... [| SINK]`, checking every name, parameter and stage type.
 * @param input the pipeline string
 * @param registry known operators and pipelines
 * @param opts `requireSink`: the last stage must be a sink (the `pipe` command)
 * @returns the built pipeline
 * @throws PipelineError pointing at the stage at fault
 */
export function buildPipeline(input: string, registry: Registry, opts: { requireSink?: boolean } = {}): BuiltPipeline {
  if (!input.trim()) throw new PipelineError('empty pipeline', 0, input, 0, 1);
  const stages = splitStages(input);
  const first = stages[0]!;
  let source: SourceDef;
  try {
    source = parseSource(first.text);
  } catch (e) {
    if (e instanceof SourceError) throw new PipelineError(e.message, 1, input, first.column, first.text.length);
    throw e;
  }
  let middle: StageText[] = stages.slice(1);
  let sink: BuiltPipeline['sink'];
  const last = middle[middle.length - 1];
  if (last && SINKS.has(last.name) && !registry.operators.has(last.name)) {
    const spec = SINKS.get(last.name)!;
    try {
      sink = { spec, params: resolveParams(spec.params, last.params) };
    } catch (e) {
      if (e instanceof ParamError) throw new PipelineError(`"${last.name}": ${e.message}`, stages.length, input, last.column, last.text.length);
      throw e;
    }
    middle = middle.slice(0, -1);
  } else if (opts.requireSink) {
    const at = last ?? first;
    const near = last && !registry.operators.has(last.name) && !registry.pipelines.has(last.name) ? suggest(last.name, SINKS.keys()) : undefined;
    throw new PipelineError(
      `a pipeline ends with a sink (${[...SINKS.keys()].join(', ')})${near ? `: did you mean "${near}"?` : ''}`,
      stages.length,
      input,
      at.column,
      at.text.length,
    );
  }
  // Prefer raw bytes when the next stage decodes them, decoded frames otherwise.
  const nextOp = middle[0] ? registry.operators.get(middle[0].name) : undefined;
  const sourceKind: 'bytes' | 'frame' =
    nextOp?.input === 'bytes' && source.emits.includes('bytes') ? 'bytes' : source.emits.includes('frame') ? 'frame' : 'bytes';
  const { resolved, output } = resolveStages(middle, sourceKind, registry, input, 2);
  return {
    source,
    sourceKind,
    stages: resolved,
    output,
    ...(sink ? { sink } : {}),
    open(ctx = {}) {
      return source.open(sourceKind, ctx).pipe(composeStages(resolved, ctx.scheduler ? { scheduler: ctx.scheduler } : {}));
    },
  };
}
