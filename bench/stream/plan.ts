/** The plans of `npm run bench:stream`'s fan-out part (`fanout.ts`): which rates, client counts and phases run. */

/**
 * Timing of the phases. Warm-up and window are given in seconds and run as frame counts at the
 * nominal frame rate (simulator 100 Hz x speed / HOP): after the restart that opens each phase,
 * frames [W, W + M) are measured, the same frames in every phase of a configuration.
 */
export interface Plan {
  /** Server processes, one per frame rate: the simulator speed and the client counts at that rate. */
  rates: Array<{ speed: number; counts: number[] }>;
  sets: number[];
  rounds: number;
  warmupMs: number;
  measureMs: number;
  /** Wait after the window closes so the window's last frame reaches every client. */
  graceMs: number;
  /** Client processes (clients are split evenly over them). */
  clientProcs: number;
}

export const FULL: Plan = {
  rates: [
    { speed: 0.8, counts: [100, 1000] },
    { speed: 0.16, counts: [10_000] },
  ],
  sets: [1, 10],
  rounds: 2,
  warmupMs: 2000,
  measureMs: 10_000,
  graceMs: 1500,
  clientProcs: 1,
};

/** A smoke run: one round (ours, then plain ws), short windows, 100 and 1,000 clients. */
export const QUICK: Plan = {
  rates: [{ speed: 0.8, counts: [100, 1000] }],
  sets: [1, 10],
  rounds: 1,
  warmupMs: 700,
  measureMs: 2500,
  graceMs: 500,
  clientProcs: 1,
};
