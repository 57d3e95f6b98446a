import type { OperatorFunction, SchedulerLike } from 'rxjs';

/**
 * What flows between pipeline stages. The pipeline parser checks that each stage's input kind
 * matches the previous stage's output kind and points at the stage when it does not.
 */
export type StreamKind = 'bytes' | 'frame' | 'window' | 'spectrum' | 'features' | 'pose' | 'floormap' | 'any';

export type ParamType = 'int' | 'number' | 'string' | 'boolean' | 'enum';

/** One parameter of an operator, as listed by `csipose operators` and parsed from `key=value`. */
export interface ParamSpec {
  readonly name: string;
  readonly type: ParamType;
  readonly default: number | string | boolean;
  readonly description: string;
  /** Inclusive bounds for int and number. */
  readonly min?: number;
  readonly max?: number;
  /** Allowed values for enum. */
  readonly values?: readonly string[];
  /**
   * The configuration setting (dotted path) that feeds this parameter in the running service,
   * read again per frame or batch (`liveParams`, pipelines/settings.ts). Declared with
   * `...configParam(path)` (src/config/params.ts), which also gives the type, default and range.
   */
  readonly setting?: string;
}

export type ParamValues = Record<string, number | string | boolean>;

/** Context handed to every operator factory. */
export interface OperatorContext {
  /** Scheduler for anything time-based; tests pass a TestScheduler. */
  readonly scheduler?: SchedulerLike;
  /**
   * Live parameter values by operator name, read again per batch or frame by the operators that
   * take live settings (infer, track, activity, alerts): how the running service applies a
   * configuration change without a restart. They override the stage's own values.
   */
  readonly live?: (operator: string) => ParamValues | undefined;
}

/**
 * The registry entry of one operator: name, what it consumes and produces, its parameters, and a
 * factory that builds the RxJS operator from validated parameter values (defaults filled in).
 */
export interface OperatorSpec {
  readonly name: string;
  readonly summary: string;
  readonly input: StreamKind;
  readonly output: StreamKind;
  readonly params: readonly ParamSpec[];
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the registry holds operators of every stream kind; OperatorFunction<unknown, unknown> would refuse them (its input is contravariant)
  create(params: ParamValues, ctx: OperatorContext): OperatorFunction<any, any>;
}
