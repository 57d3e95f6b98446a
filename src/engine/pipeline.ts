import { type Observable, type OperatorFunction, identity } from 'rxjs';
import type { OperatorContext, OperatorSpec, ParamValues, StreamKind } from './spec.js';
import { ParamError, resolveParams } from './params.js';

/** A named composition of operators (a file in `pipelines/`). */
export interface PipelineDef {
  readonly name: string;
  readonly summary: string;
  /** Stages in order: operator (or pipeline) name and parameter values. */
  readonly stages: ReadonlyArray<readonly [string, Readonly<Record<string, number | string | boolean>>?]>;
}

/** Everything a pipeline string can name. */
export interface Registry {
  readonly operators: ReadonlyMap<string, OperatorSpec>;
  readonly pipelines: ReadonlyMap<string, PipelineDef>;
}

/** One `name key=value ...` stage of a pipeline string, with where it stands in the string. */
export interface StageText {
  readonly name: string;
  readonly params: Record<string, string>;
  /** The stage exactly as written (trimmed). */
  readonly text: string;
  /** Column of the stage's first character in the whole string. */
  readonly column: number;
}

/** A pipeline that cannot be built; points at the stage at fault. */
export class PipelineError extends Error {
  constructor(
    readonly reason: string,
    /** 1-based stage number, 0 when the whole string is at fault. */
    readonly stage: number,
    readonly input: string,
    readonly column: number,
    readonly length: number,
  ) {
    super(PipelineError.render(reason, stage, input, column, length));
    this.name = 'PipelineError';
  }

  private static render(reason: string, stage: number, input: string, column: number, length: number): string {
    if (!input) return reason;
    const head = stage > 0 ? `stage ${stage}: ${reason}` : reason;
    return `${head}\n  ${input}\n  ${' '.repeat(column)}${'^'.repeat(Math.max(1, length))}`;
  }
}

/**
 * Splits a pipeline string on `|` into stages, keeping each stage's column for error messages.
 * @param input e.g. `file:cap.dat | intel5300 | sanitize | window size=64 hop=8 | ndjson`
 * @returns the stages in order
 */
export function splitStages(input: string): StageText[] {
  const out: StageText[] = [];
  let start = 0;
  for (let i = 0; i <= input.length; i++) {
    if (i === input.length || input[i] === '|') {
      const raw = input.slice(start, i);
      const lead = raw.length - raw.trimStart().length;
      const text = raw.trim();
      const column = start + lead;
      if (!text) throw new PipelineError('empty stage', out.length + 1, input, Math.min(column, input.length), 1);
      const [name, ...rest] = text.split(/\s+/);
      const params: Record<string, string> = {};
      let col = column + name!.length;
      for (const tok of rest) {
        const at = text.indexOf(tok, col - column) + column;
        col = at + tok.length;
        const eq = tok.indexOf('=');
        if (eq <= 0 || eq === tok.length - 1) throw new PipelineError(`expected key=value, got "${tok}"`, out.length + 1, input, at, tok.length);
        params[tok.slice(0, eq)] = tok.slice(eq + 1);
      }
      out.push({ name: name!, params, text, column });
      start = i + 1;
    }
  }
  return out;
}

/** Edit distance, for "did you mean". */
function distance(a: string, b: string): number {
  const d = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = d[0]!;
    d[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = d[j]!;
      d[j] = Math.min(d[j]! + 1, d[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return d[b.length]!;
}

/** The closest known name within two edits, for error messages. */
export function suggest(name: string, known: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestD = 3;
  for (const k of known) {
    const dd = distance(name, k);
    if (dd < bestD) {
      bestD = dd;
      best = k;
    }
  }
  return best;
}

/** A resolved operator stage, ready to instantiate. */
export interface ResolvedStage {
  readonly spec: OperatorSpec;
  readonly params: ParamValues;
  /** The pipeline it was expanded from, if any. */
  readonly via?: string;
}

/** Where an error in a resolved stage should point. */
interface Origin {
  stage: number;
  input: string;
  column: number;
  length: number;
}

/**
 * Resolves operator and pipeline stages into a flat, type-checked list of operators.
 * @param stages stages after the source and before the sink
 * @param inputKind what the source emits
 * @param registry known operators and pipelines
 * @param input the whole pipeline string, for error messages ('' when built from code)
 * @param stageOffset 1-based number of the first of `stages` within the whole string
 * @returns the operators in order and the kind of the last one's output
 */
export function resolveStages(
  stages: readonly StageText[],
  inputKind: StreamKind,
  registry: Registry,
  input = '',
  stageOffset = 1,
): { resolved: ResolvedStage[]; output: StreamKind } {
  const resolved: ResolvedStage[] = [];
  let kind = inputKind;
  stages.forEach((st, i) => {
    const origin: Origin = { stage: stageOffset + i, input, column: st.column, length: st.text.length };
    kind = expand(st.name, st.params, kind, registry, resolved, origin, undefined, 0);
  });
  return { resolved, output: kind };
}

function fail(reason: string, o: Origin, nameOnly = false): never {
  throw new PipelineError(reason, o.stage, o.input, o.column, nameOnly ? Math.max(1, o.length) : o.length);
}

function expand(
  name: string,
  raw: Record<string, unknown>,
  kind: StreamKind,
  registry: Registry,
  out: ResolvedStage[],
  origin: Origin,
  via: string | undefined,
  depth: number,
): StreamKind {
  if (depth > 8) fail(`pipeline "${name}" nests too deeply`, origin);
  const op = registry.operators.get(name);
  if (op) {
    if (op.input !== 'any' && kind !== 'any' && op.input !== kind) {
      fail(`"${name}" takes ${op.input} but the previous stage gives ${kind}${hintFor(op.input, kind, registry)}`, origin);
    }
    let params: ParamValues;
    try {
      params = resolveParams(op.params, raw);
    } catch (e) {
      if (e instanceof ParamError) fail(`"${name}": ${e.message}`, origin);
      throw e;
    }
    try {
      // Factories validate combinations the declarations cannot express (e.g. an odd window).
      op.create(params, {});
    } catch (e) {
      fail(`"${name}": ${(e as Error).message}`, origin);
    }
    out.push(via ? { spec: op, params, via } : { spec: op, params });
    return op.output === 'any' ? kind : op.output;
  }
  const pl = registry.pipelines.get(name);
  if (pl) {
    // Parameters of a pipeline stage override its inner stages: `sense window.size=128`.
    const overrides = new Map<string, Record<string, unknown>>();
    for (const [k, v] of Object.entries(raw)) {
      const dot = k.indexOf('.');
      const inner = dot > 0 ? k.slice(0, dot) : '';
      if (!inner || !pl.stages.some(([n]) => n === inner))
        fail(`pipeline "${name}" takes parameters as stage.param (stages: ${pl.stages.map(([n]) => n).join(', ')}), got "${k}"`, origin);
      const m = overrides.get(inner) ?? {};
      m[k.slice(dot + 1)] = v;
      overrides.set(inner, m);
    }
    let k2 = kind;
    for (const [n, p] of pl.stages) {
      k2 = expand(n, { ...(p ?? {}), ...(overrides.get(n) ?? {}) }, k2, registry, out, origin, via ?? name, depth + 1);
    }
    return k2;
  }
  const s = suggest(name, [...registry.operators.keys(), ...registry.pipelines.keys()]);
  fail(`unknown operator "${name}"${s ? ` (did you mean "${s}"?)` : ''}`, origin, true);
}

function hintFor(want: StreamKind, have: StreamKind, registry: Registry): string {
  if (want === 'frame' && have === 'bytes') {
    // The decoder stages are the registry's bytes -> frame operators, one per capture format.
    const decoders = [...registry.operators.values()].filter((o) => o.input === 'bytes' && o.output === 'frame').map((o) => o.name);
    if (decoders.length > 0) return ` (add a decoder stage first: ${orList(decoders)})`;
  }
  if (want === 'window' && have === 'frame') return ' (add a window stage first)';
  if (want === 'bytes') return ' (decoders read raw bytes: put them right after a file: or stdin source)';
  return '';
}

/** `a, b or c`. */
function orList(names: readonly string[]): string {
  return names.length < 2 ? names.join('') : `${names.slice(0, -1).join(', ')} or ${names[names.length - 1]}`;
}

/**
 * Chains resolved stages into one RxJS operator.
 * @param stages from resolveStages
 * @param ctx scheduler and other context handed to every operator
 * @returns the composed operator
 */
export function composeStages(stages: readonly ResolvedStage[], ctx: OperatorContext = {}): OperatorFunction<unknown, unknown> {
  const fns = stages.map((s) => s.spec.create(s.params, ctx));
  if (fns.length === 0) return identity;
  return (src: Observable<unknown>) => fns.reduce<Observable<unknown>>((acc, fn) => acc.pipe(fn), src);
}

/**
 * A named pipeline as one operator, e.g. `frames$.pipe(pipelineOperator(sense, registry))`.
 * @param def the pipeline
 * @param registry known operators
 * @param inputKind what flows in (default frame)
 * @param ctx operator context
 */
export function pipelineOperator(
  def: PipelineDef,
  registry: Registry,
  inputKind: StreamKind = 'frame',
  ctx: OperatorContext = {},
): OperatorFunction<unknown, unknown> {
  const stage: StageText = { name: def.name, params: {}, text: def.name, column: 0 };
  return composeStages(resolveStages([stage], inputKind, registry).resolved, ctx);
}
