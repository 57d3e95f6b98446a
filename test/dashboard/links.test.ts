/**
 * How the dashboard reads and words the links of `/system/status` (web/src/links.ts): both forms
 * of the status, a service that does not report links, the units of the figures, and that the
 * colours of the floor plan's lines are the ones the legend and the table use (style.css).
 * The browser test (browser.test.ts) checks the page against the live service; these figures,
 * like a loss above 0 or a packet minutes old, do not occur there on demand.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LINK_STYLE, lastPacketAge, lossPercent, readLinks, type LinkState, type LinkStatus } from '../../web/src/links.js';
import { repoRoot } from '../helpers/cli.js';

const link = (over: Partial<LinkStatus> = {}): LinkStatus => ({
  link_id: 'tx-rx1',
  tx: 'tx',
  rx: 'rx1',
  state: 'live',
  primary: true,
  rate_hz: 99.87,
  packet_loss_rate: 0.0174,
  last_packet_time: '2026-11-27T10:00:00.000Z',
  lag_ms: -1.26,
  layout: '3x3x30',
  frames: 1200,
  reason: '',
  ...over,
});

describe('readLinks', () => {
  it('reads Form B (csi_processor) and Form A (csi_receiver), in the order given', () => {
    const links = [link(), link({ link_id: 'tx-rx2', rx: 'rx2', state: 'waiting', primary: false })];
    expect(readLinks({ components: { csi_processor: { status: 'active', links } } })).toEqual(links);
    expect(readLinks({ components: { csi_receiver: { status: 'active', links } } })).toEqual(links);
    expect(readLinks({ components: { csi_processor: { status: 'stopped', links: [] } } })).toEqual([]);
  });

  it('gives undefined when the service does not report links, and words a state it does not know as unknown', () => {
    expect(readLinks({ components: { csi_processor: { status: 'active', last_heartbeat: null } } })).toBeUndefined();
    expect(readLinks({})).toBeUndefined();
    expect(readLinks(undefined)).toBeUndefined();
    const odd = readLinks({ components: { csi_processor: { links: [link({ state: 'resting' as LinkState }), { nonsense: true }] } } });
    expect(odd).toEqual([link({ state: 'unknown' })]);
  });
});

describe('the figures in words', () => {
  it('loss as a percentage with one decimal', () => {
    expect(lossPercent(link())).toBe('1.7');
    expect(lossPercent(link({ packet_loss_rate: 0 }))).toBe('0');
    expect(lossPercent(link({ packet_loss_rate: 0.5 }))).toBe('50');
  });

  it('the last packet as its age when the status was read, on the service clock', () => {
    const at = '2026-11-27T10:00:00.340Z';
    expect(lastPacketAge(link(), at)).toBe('0.3 s ago');
    expect(lastPacketAge(link(), '2026-11-27T10:00:42.000Z')).toBe('42.0 s ago');
    expect(lastPacketAge(link(), '2026-11-27T10:04:02.000Z')).toBe('4 min 2 s ago');
    expect(lastPacketAge(link({ last_packet_time: null }), at)).toBe('never');
    // A packet stamped after the answer (it cannot be: the same clock) is not shown in the future.
    expect(lastPacketAge(link(), '2026-11-27T09:59:59.000Z')).toBe('0.0 s ago');
  });
});

describe('the states on the floor plan', () => {
  it('draws a live link solid and every other state dashed; stopped and waiting alike', () => {
    for (const [state, style] of Object.entries(LINK_STYLE)) expect(style.dash.length > 0, state).toBe(state !== 'live');
    expect(LINK_STYLE.stopped).toEqual(LINK_STYLE.waiting);
    const colours = new Set([LINK_STYLE.live.color, LINK_STYLE.lagging.color, LINK_STYLE.stopped.color, LINK_STYLE.mismatched.color]);
    expect(colours.size).toBe(4);
  });

  it("colours the legend and the table (style.css) as the plan's lines", () => {
    const css = readFileSync(join(repoRoot, 'web/src/style.css'), 'utf8');
    // `.link-a, .link-b { color: #rrggbb; }` rules: the colour of each state's class.
    const colour = new Map<string, string>();
    for (const [, selectors, c] of css.matchAll(/([^{}]+)\{\s*color:\s*(#[0-9a-f]{6});\s*\}/g))
      for (const sel of selectors!.split(',')) {
        const state = /^\s*\.link-([a-z]+)\s*$/.exec(sel)?.[1];
        if (state) colour.set(state, c!);
      }
    for (const [state, style] of Object.entries(LINK_STYLE)) expect(colour.get(state), `.link-${state} in style.css`).toBe(style.color);
  });
});
