/** Alerts as the alerts benchmark compares them (bench/scale/alerts.ts, bench/scale/reference.ts). */

/** An alert as the comparison needs it. */
export interface AlertKey {
  id: string;
  env: string;
  type: string;
  severity: string;
  zone: string;
  /** The frame time it was raised at, epoch ms. */
  time: number;
  /** `metadata.fall_time` of a fall alert (the fall's first frame), else NaN. */
  fallTime: number;
}

/** The fields of an alert the comparison reads. */
export function alertKey(a: {
  alertId: string;
  environmentId: string;
  type: string;
  severity: string;
  zone?: string;
  time: number;
  metadata: Record<string, unknown>;
}): AlertKey {
  const ft = a.metadata.fall_time;
  return {
    id: a.alertId,
    env: a.environmentId,
    type: a.type,
    severity: a.severity,
    zone: a.zone ?? '',
    time: a.time,
    fallTime: typeof ft === 'number' ? ft : NaN,
  };
}

/** What {@link matchAlerts} found. */
export interface AlertMatch {
  matched: number;
  /** Reference alerts with no counterpart. */
  missing: AlertKey[];
  /** Alerts with no counterpart in the reference. */
  extra: AlertKey[];
  /** Largest time difference of a matched pair, ms. */
  maxShiftMs: number;
}

/**
 * Pairs two sets of alerts one to one: the same environment, type, severity and zone, raised at
 * frame times at most `tolMs` apart, the closest pairs first. Alert ids are not compared: a worker
 * that took a room over numbers its tracks anew, and a track id is part of an alert id.
 * @param reference the uninterrupted run's alerts
 * @param got the cluster's (distinct ids)
 * @param tolMs largest time difference of a pair
 */
export function matchAlerts(reference: readonly AlertKey[], got: readonly AlertKey[], tolMs: number): AlertMatch {
  const group = (a: AlertKey) => `${a.env}|${a.type}|${a.severity}|${a.zone}`;
  const pairs: Array<{ r: number; g: number; d: number }> = [];
  const byGroup = new Map<string, number[]>();
  got.forEach((a, g) => {
    const k = group(a);
    const list = byGroup.get(k) ?? [];
    list.push(g);
    byGroup.set(k, list);
  });
  reference.forEach((a, r) => {
    for (const g of byGroup.get(group(a)) ?? []) {
      const d = Math.abs(got[g]!.time - a.time);
      if (d <= tolMs) pairs.push({ r, g, d });
    }
  });
  pairs.sort((x, y) => x.d - y.d);
  const usedR = new Set<number>();
  const usedG = new Set<number>();
  let maxShiftMs = 0;
  for (const p of pairs) {
    if (usedR.has(p.r) || usedG.has(p.g)) continue;
    usedR.add(p.r);
    usedG.add(p.g);
    maxShiftMs = Math.max(maxShiftMs, p.d);
  }
  return {
    matched: usedR.size,
    missing: reference.filter((_, r) => !usedR.has(r)),
    extra: got.filter((_, g) => !usedG.has(g)),
    maxShiftMs,
  };
}
