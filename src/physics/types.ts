/**
 * Shared shapes of the physics front end (issue 19 item 1): per link, packets are aligned
 * (`align.ts`), the empty room's static channel is fitted and taken away (`static.ts`), and the
 * moving part of the channel over a short or long window is beamformed onto a floor grid in room
 * coordinates (`beamform.ts`), where successive peak removal finds candidate people
 * (`candidates.ts`).
 *
 * Complex samples are interleaved (re, im) in the CSI frame's order (src/csi/frame.ts):
 * complex index c = (sc * nRx + rx) * nTx + tx.
 */

/** The moving part of one link's channel over a window: `snapshots` aligned packets, static channel removed. */
export interface MovingWindow {
  readonly nSub: number;
  readonly nRx: number;
  readonly nTx: number;
  /** Packets in the window. */
  readonly snapshots: number;
  /**
   * snapshots x (nSub x nRx x nTx) complex, interleaved: snapshot s, complex index c at
   * re = data[2 * (s * nSub * nRx * nTx + c)], im = the next.
   */
  readonly data: Float32Array;
  /** Epoch ms of the window's last packet. */
  readonly time: number;
}

/** A point in room metres. */
export interface Point3 {
  readonly x: number;
  readonly y: number;
  readonly z: number;
}
