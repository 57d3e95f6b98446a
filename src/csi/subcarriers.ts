/**
 * The standard subcarrier layouts a frame can have when no capture format dictates its own
 * (the simulator's frames, submitted packets). Capture decoders keep their format's tables in
 * src/decoders/subcarriers.ts.
 */

/** Supported subcarrier layouts (subcarrier count). */
export type SubcarrierLayout = 30 | 56 | 114;

function range(from: number, to: number, step: number): number[] {
  const out: number[] = [];
  for (let i = from; i <= to; i += step) out.push(i);
  return out;
}

/**
 * Subcarrier index tables, shared by every frame of a layout (do not modify):
 * - 30: Intel 5300 grouping at 20 MHz: -28, -26, ..., -2, -1, 1, 3, ..., 27, 28;
 * - 56: every data and pilot subcarrier at 20 MHz: -28..-1, 1..28;
 * - 114: every data and pilot subcarrier at 40 MHz: -58..-2, 2..58.
 */
export const SUBCARRIERS: Readonly<Record<SubcarrierLayout, Int16Array>> = Object.freeze({
  30: Int16Array.from([...range(-28, -2, 2), -1, ...range(1, 27, 2), 28]),
  56: Int16Array.from([...range(-28, -1, 1), ...range(1, 28, 1)]),
  114: Int16Array.from([...range(-58, -2, 1), ...range(2, 58, 1)]),
});

/**
 * The subcarrier indices of an `n`-subcarrier frame: the shared table of a standard layout, else
 * `n` consecutive indices centred on the channel (a fresh array).
 *
 * @example
 * subcarriersFor(56) === SUBCARRIERS[56]; // true
 * subcarriersFor(4); // Int16Array [-2, -1, 0, 1]
 */
export function subcarriersFor(n: number): Int16Array {
  if (n === 30 || n === 56 || n === 114) return SUBCARRIERS[n];
  return Int16Array.from({ length: n }, (_, i) => i - (n >> 1));
}
