import type { ParamValues } from '../src/engine/spec.js';
import { getPath } from '../src/config/schema.js';
import { primaryLinkRadios, siteGeometry } from '../src/config/site.js';
import type { ConfigSnapshot } from '../src/config/store.js';
import { formatSite } from '../src/model/contract.js';

/**
 * The one mapping from configuration to operator parameters: which setting feeds which parameter
 * of which stage. The parameters' types, defaults and ranges come from the same settings (each
 * operator declares them with `configParam`), so a pipeline string, `csipose operators` and the
 * running service agree.
 */
/** The reference view's settings, read by every stage that projects skeletons (infer, refine). */
const VIEW_PARAMS = {
    viewWidth: 'environment.view.width',
    viewHeight: 'environment.view.height',
    viewHfovDeg: 'environment.view.hfov_deg',
    viewX: 'environment.view.x',
    viewY: 'environment.view.y',
    viewZ: 'environment.view.z',
    viewYawDeg: 'environment.view.yaw_deg',
    viewPitchDeg: 'environment.view.pitch_deg',
} as const;

export const CONFIG_PARAMS = {
  infer: {
    confidenceThreshold: 'detection.confidence_threshold',
    maxPersons: 'detection.max_persons',
    batchSize: 'neural_network.batch_size',
    maxWaitMs: 'neural_network.max_wait_ms',
    ...VIEW_PARAMS,
  },
  refine: {
    confidenceThreshold: 'detection.confidence_threshold',
    maxPersons: 'detection.max_persons',
    ...VIEW_PARAMS,
  },
  floorMap: {
    roomWidth: 'environment.site.room_width',
    roomDepth: 'environment.site.room_depth',
  },
  track: {
    enabled: 'detection.tracking_enabled',
    minHits: 'detection.tracking_min_hits',
    maxAge: 'detection.tracking_max_age',
  },
  activity: {
    enabled: 'analytics.enable_activity_recognition',
  },
  alerts: {
    fallDetection: 'alerts.fall_detection.enabled',
    sensitivity: 'alerts.fall_detection.sensitivity',
    notificationDelaySeconds: 'alerts.fall_detection.notification_delay_seconds',
    inactivity: 'alerts.inactivity_detection.enabled',
    thresholdMinutes: 'alerts.inactivity_detection.threshold_minutes',
  },
} as const satisfies Record<string, Record<string, string>>;

/** Parameter values by operator name, as a configuration sets them. */
export type LiveParams = { readonly [Op in keyof typeof CONFIG_PARAMS]: Readonly<ParamValues> };

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
  const out: Record<string, ParamValues> = {};
  for (const [op, params] of Object.entries(CONFIG_PARAMS)) {
    const values: ParamValues = {};
    for (const [name, path] of Object.entries(params)) values[name] = getPath(c, path) as number | boolean;
    out[op] = values;
  }
  out.infer!.site = formatSite(siteGeometry(c));
  // The one-link model reads the primary link: its skeletons are relative to the primary receiver.
  const { rx } = primaryLinkRadios(c);
  out.infer!.receiverX = rx.x;
  out.infer!.receiverY = rx.y;
  out.alerts!.zones = c.environment.zones.length ? JSON.stringify(c.environment.zones) : '';
  const params = out as LiveParams;
  if (Object.isFrozen(c)) cache.set(c, params);
  return params;
}
