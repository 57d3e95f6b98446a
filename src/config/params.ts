import { DEFAULT_RADIOS } from '../csi/radios.js';
import { RADIO_LIMITS, fieldAt } from './schema.js';

/** An operator parameter's declaration as the configuration field behind it gives it (a ParamSpec without name and description). */
export interface ConfigParam {
  /**
   * The field's dotted path: the setting that feeds the parameter in the running service
   * (`liveParams`, pipelines/settings.ts, reads every parameter that names one).
   */
  readonly setting?: string;
  readonly type: 'int' | 'number' | 'boolean';
  readonly default: number | boolean;
  readonly min?: number;
  readonly max?: number;
}

/**
 * The type, default and range of an operator parameter that a configuration field sets, taken
 * from that field, so that `csipose operators`, a pipeline string and the service agree with the
 * config schema (stated once, there); and the field's path as the parameter's `setting`, so that
 * the running service feeds it from the configuration (`liveParams`): declaring the parameter
 * with `...configParam(path)` is all it takes.
 * @param path the field's dotted path
 * @returns the parameter's type, default and bounds
 * @throws Error when the path is not a number, integer or boolean field (a programming error)
 * @example { name: 'maxPersons', ...configParam('detection.max_persons'), description: '...' }
 */
export function configParam(path: string): ConfigParam {
  const f = fieldAt(path);
  if (f?.type === 'number' || f?.type === 'integer') {
    return { setting: path, type: f.type === 'integer' ? 'int' : 'number', default: f.default, min: f.minimum, max: f.maximum };
  }
  if (f?.type === 'boolean') return { setting: path, type: 'boolean', default: f.default };
  throw new Error(`configParam: ${path} is not a number or boolean setting`);
}

/**
 * An operator parameter that takes a coordinate of the primary receiver (the first `rx` of
 * `environment.site.radios`): its range from the schema's RADIO_LIMITS, its default the default
 * site's primary receiver.
 * No `setting`: `liveParams` derives the value from `environment.site.radios`.
 * @param axis 'x' or 'y'
 * @returns the parameter's type, default and bounds
 * @example primaryReceiverParam('x') // { type: 'number', default: 3, min: 0, max: 100 }
 */
export function primaryReceiverParam(axis: 'x' | 'y'): ConfigParam {
  const rx = DEFAULT_RADIOS.find((r) => r.role === 'rx')!;
  return { type: 'number', default: rx[axis], min: RADIO_LIMITS[axis].minimum, max: RADIO_LIMITS[axis].maximum };
}
