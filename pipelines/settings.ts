import type { OperatorSpec, ParamValues } from '../src/engine/spec.js';
import { OPERATORS } from '../operators/index.js';
import { getPath } from '../src/config/schema.js';
import { primaryLinkRadios, siteGeometry } from '../src/config/site.js';
import type { ConfigSnapshot } from '../src/config/store.js';
import { formatSite } from '../src/model/contract.js';

/**
 * Which setting feeds which parameter of which stage is declared once, by the parameter itself:
 * an operator declares a parameter with `...configParam(path)` (src/config/params.ts), which gives
 * its type, default and range from the config schema and names the setting (`ParamSpec.setting`).
 * This module reads those declarations from the operators' registry: the running service, a
 * pipeline string and `csipose operators` agree because there is nothing else to agree with.
 */

/** One stage's settings: parameter name -> setting path. */
export type StageSettings = Readonly<Record<string, string>>;

/**
 * Every parameter that names a setting, by operator: the map the live pipeline is fed from.
 * @param operators the operators to read (default: every registered one, operators/index.ts)
 * @returns parameter -> setting path, by operator name (operators without one are left out)
 * @example settingsOf().track.minHits // 'detection.tracking_min_hits'
 */
export function settingsOf(operators: readonly OperatorSpec[] = OPERATORS): Readonly<Record<string, StageSettings>> {
  const out: Record<string, Record<string, string>> = {};
  for (const op of operators) {
    for (const p of op.params) if (p.setting !== undefined) (out[op.name] ??= {})[p.name] = p.setting;
  }
  return out;
}

/** The settings of the registered operators ({@link settingsOf}), derived once. */
export const CONFIG_PARAMS: Readonly<Record<string, StageSettings>> = settingsOf();

/** Parameter values by operator name, as a configuration sets them. */
export type LiveParams = Readonly<Record<string, Readonly<ParamValues>>>;

const cache = new WeakMap<object, LiveParams>();

/**
 * The live parameters of a configuration: the scalar settings of {@link CONFIG_PARAMS}, plus the
 * compound ones in the form the stages take them: `infer site` (`environment.site`'s primary link,
 * the compact string, '' when unknown), `infer receiverX` / `receiverY` (the primary receiver of
 * `environment.site.radios`) and `alerts zones` (`environment.zones` as JSON).
 *
 * The store hands out one frozen snapshot until the next update; for it this returns the same
 * object every time, so a stage that reads it per frame allocates nothing and can cache what it
 * derives (a parsed site, compiled zones) by value.
 * @param c the configuration snapshot
 * @returns the parameters by operator
 * @example liveParams(store.get()).infer.confidenceThreshold // 0.5 by default
 */
export function liveParams(c: ConfigSnapshot): LiveParams {
  const hit = Object.isFrozen(c) ? cache.get(c) : undefined;
  if (hit) return hit;
  const params = liveParamsOf(c, CONFIG_PARAMS);
  if (Object.isFrozen(c)) cache.set(c, params);
  return params;
}

/**
 * {@link liveParams} for a given map of settings (e.g. {@link settingsOf} over other operators),
 * uncached.
 * @param c the configuration snapshot
 * @param settings parameter -> setting path, by operator
 * @returns the parameters by operator
 */
export function liveParamsOf(c: ConfigSnapshot, settings: Readonly<Record<string, StageSettings>>): LiveParams {
  const out: Record<string, ParamValues> = {};
  for (const [op, params] of Object.entries(settings)) {
    const values: ParamValues = {};
    for (const [name, path] of Object.entries(params)) values[name] = getPath(c, path) as number | boolean;
    out[op] = values;
  }
  // The compound settings, in the form the stages take them.
  if (out.infer) {
    out.infer.site = formatSite(siteGeometry(c));
    // The one-link model reads the primary link: its skeletons are relative to the primary receiver.
    const { rx } = primaryLinkRadios(c);
    out.infer.receiverX = rx.x;
    out.infer.receiverY = rx.y;
  }
  if (out.alerts) out.alerts.zones = c.environment.zones.length ? JSON.stringify(c.environment.zones) : '';
  return out;
}
