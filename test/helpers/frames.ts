import type { CsiFrame } from '../../src/csi/frame.js';

export interface FrameInit {
  nRx?: number;
  nTx?: number;
  nSub?: number;
  time?: number;
  seq?: number;
  index?: number;
  subcarriers?: Int16Array;
  /** Complex value of (sc, rx, tx); default 1 + 0j. */
  value?: (sc: number, rx: number, tx: number) => [number, number];
}

/** A synthetic frame for operator tests (format `sim`, source `test`). */
export function makeFrame(init: FrameInit = {}): CsiFrame {
  const nRx = init.nRx ?? 3;
  const nTx = init.nTx ?? 1;
  const nSub = init.nSub ?? 30;
  const csi = new Float32Array(nSub * nRx * nTx * 2);
  const value = init.value ?? (() => [1, 0] as [number, number]);
  for (let sc = 0; sc < nSub; sc++)
    for (let rx = 0; rx < nRx; rx++)
      for (let tx = 0; tx < nTx; tx++) {
        const [re, im] = value(sc, rx, tx);
        const o = ((sc * nRx + rx) * nTx + tx) * 2;
        csi[o] = re;
        csi[o + 1] = im;
      }
  const subcarriers = init.subcarriers ?? Int16Array.from({ length: nSub }, (_, i) => i - (nSub >> 1));
  const seq = init.seq ?? 0;
  return {
    format: 'sim',
    sourceId: 'test',
    environmentId: 'default',
    index: init.index ?? seq,
    time: init.time ?? 1_767_225_600_000 + seq * 10,
    deviceTime: seq * 10_000,
    clockUs: seq * 10_000,
    seq,
    rssi: new Array(nRx).fill(-40),
    noise: -92,
    channel: 36,
    bandwidthMhz: 20,
    nRx,
    nTx,
    nSub,
    subcarriers,
    csi,
  };
}
