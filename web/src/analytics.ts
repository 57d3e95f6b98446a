/**
 * Analytics for a chosen period ending now: occupancy over time (`GET /analytics/occupancy`), the
 * activity summary (`GET /analytics/healthcare?metrics=activity_summary`) and the events list
 * (`GET /analytics/events`), drawn with uPlot. Refreshed when shown, on demand, and every minute
 * while shown (the analytics rate limit is 500 requests an hour; this takes 3 a minute).
 */
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { describeError, type Api } from './api.js';
import { dateTime, h, num, replace } from './dom.js';
import type { ActivityEvent } from './types.js';

type Period = 'hour' | 'day' | 'week' | 'month';

/** Each period's length and the occupancy interval that gives it a readable number of points. */
const PERIODS: Record<Period, { label: string; ms: number; interval: string }> = {
  hour: { label: 'Last hour', ms: 3_600_000, interval: '5min' },
  day: { label: 'Last 24 hours', ms: 86_400_000, interval: '15min' },
  week: { label: 'Last 7 days', ms: 7 * 86_400_000, interval: '1hour' },
  month: { label: 'Last 30 days', ms: 30 * 86_400_000, interval: '1hour' },
};
const ACTIVITIES = ['standing', 'walking', 'sitting', 'lying'] as const;
const REFRESH_MS = 60_000;
const EVENTS_SHOWN = 100;

interface Occupancy {
  summary: { average_occupancy: number | null; peak_occupancy: number; peak_time: string | null; total_person_hours: number; frames: number };
  time_series: Array<{ timestamp: string; occupancy: number; confidence: number | null }>;
}

const axisStyle = { stroke: '#8b949e', grid: { stroke: 'rgba(139,148,158,0.15)' }, ticks: { stroke: 'rgba(139,148,158,0.3)' } };

export class AnalyticsPanel {
  readonly element: HTMLElement;
  private period: Period = 'day';
  private readonly cards: HTMLElement;
  private readonly occupancyBox: HTMLElement;
  private readonly activityBox: HTMLElement;
  private readonly events: HTMLElement;
  private readonly message: HTMLElement;
  private occupancy: uPlot | undefined;
  private activity: uPlot | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private visible = false;

  constructor(private readonly api: Api) {
    const select = h(
      'select',
      { id: 'analytics-period', onchange: (ev: Event) => ((this.period = (ev.target as HTMLSelectElement).value as Period), void this.refresh()) },
      ...Object.entries(PERIODS).map(([k, p]) => h('option', { value: k, text: p.label, selected: k === this.period })),
    );
    this.cards = h('div', { class: 'cards' });
    this.occupancyBox = h('div', { id: 'occupancy-chart', class: 'chart' });
    this.activityBox = h('div', { id: 'activity-chart', class: 'chart' });
    this.events = h('div', { id: 'events', class: 'events' });
    this.message = h('p', { class: 'form-message', role: 'status' });
    this.element = h(
      'div',
      { class: 'analytics' },
      h('div', { class: 'toolbar' }, h('label', { class: 'inline' }, 'Period ', select), h('button', { type: 'button', onclick: () => void this.refresh() }, 'Refresh'), this.message),
      this.cards,
      h('div', { class: 'charts' }, h('section', { class: 'panel' }, h('h2', { text: 'Occupancy' }), this.occupancyBox), h('section', { class: 'panel' }, h('h2', { text: 'Activity (person-minutes)' }), this.activityBox)),
      h('section', { class: 'panel' }, h('h2', { text: 'Events' }), this.events),
    );
    new ResizeObserver(() => this.resize()).observe(this.element);
  }

  show(): void {
    this.visible = true;
    void this.refresh();
  }

  hide(): void {
    this.visible = false;
    clearTimeout(this.timer);
  }

  private async refresh(): Promise<void> {
    clearTimeout(this.timer);
    const p = PERIODS[this.period];
    const end = new Date();
    const start = new Date(end.getTime() - p.ms);
    const range = { start_time: start.toISOString(), end_time: end.toISOString() };
    this.message.className = 'form-message note';
    this.message.textContent = 'Loading…';
    try {
      const [occ, health, events] = await Promise.all([
        this.api.request<Occupancy>('GET', 'analytics/occupancy', { query: { ...range, interval: p.interval } }),
        this.api.request<{ activity_summary: Record<string, number> }>('GET', 'analytics/healthcare', { query: { period: this.period, metrics: 'activity_summary' } }),
        this.api.request<ActivityEvent[]>('GET', 'analytics/events', { query: { ...range, limit: EVENTS_SHOWN } }),
      ]);
      this.renderCards(occ.data);
      this.renderOccupancy(occ.data, start, end);
      this.renderActivity(health.data.activity_summary);
      this.renderEvents(events.data, Number(events.pagination?.total_count ?? events.data.length));
      this.message.textContent = `Updated ${end.toLocaleTimeString()}`;
    } catch (e) {
      this.message.className = 'form-message error';
      this.message.textContent = describeError(e, 'Loading the analytics');
    }
    if (this.visible) this.timer = setTimeout(() => void this.refresh(), REFRESH_MS);
  }

  private renderCards(o: Occupancy): void {
    const s = o.summary;
    const card = (label: string, value: string) => h('div', { class: 'card' }, h('span', { class: 'value', text: value }), h('span', { class: 'label', text: label }));
    replace(
      this.cards,
      card('average occupancy', num(s.average_occupancy, 2)),
      card(`peak occupancy${s.peak_time ? ` (${dateTime(s.peak_time)})` : ''}`, String(s.peak_occupancy)),
      card('person-hours', num(s.total_person_hours, 2)),
      card('pose frames', String(s.frames)),
    );
  }

  private width(box: HTMLElement): number {
    return Math.max(240, box.clientWidth || 480);
  }

  private renderOccupancy(o: Occupancy, start: Date, end: Date): void {
    const xs = o.time_series.map((p) => Date.parse(p.timestamp) / 1000);
    const ys = o.time_series.map((p) => p.occupancy);
    this.occupancy?.destroy();
    this.occupancy = new uPlot(
      {
        width: this.width(this.occupancyBox),
        height: 220,
        scales: { x: { time: true, min: start.getTime() / 1000, max: end.getTime() / 1000 }, y: { range: (_u, _min, max) => [0, Math.max(1, Math.ceil(max))] } },
        axes: [axisStyle, { ...axisStyle, label: 'persons' }],
        series: [{}, { label: 'occupancy', stroke: '#58a6ff', fill: 'rgba(88,166,255,0.15)', width: 2, points: { show: xs.length < 60 } }],
        legend: { show: false },
      },
      [xs, ys],
      this.occupancyBox,
    );
    if (!xs.length) this.occupancyBox.append(h('p', { class: 'muted', text: 'No pose frames stored in this period.' }));
  }

  private renderActivity(summary: Record<string, number> | undefined): void {
    const ys = ACTIVITIES.map((a) => summary?.[`${a}_minutes`] ?? 0);
    this.activity?.destroy();
    this.activity = new uPlot(
      {
        width: this.width(this.activityBox),
        height: 220,
        scales: { x: { time: false, range: [-0.5, ACTIVITIES.length - 0.5] }, y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] } },
        axes: [{ ...axisStyle, splits: () => ACTIVITIES.map((_, i) => i), values: () => [...ACTIVITIES] }, { ...axisStyle, label: 'minutes' }],
        series: [{}, { label: 'minutes', stroke: '#3fb950', fill: 'rgba(63,185,80,0.5)', paths: uPlot.paths.bars!({ size: [0.6] }), points: { show: false } }],
        legend: { show: false },
        cursor: { show: false },
      },
      [ACTIVITIES.map((_, i) => i), ys],
      this.activityBox,
    );
  }

  private renderEvents(list: ActivityEvent[], total: number): void {
    const rows = list.map((e) => {
      const meta = e.metadata ?? {};
      const detail =
        e.type === 'activity_change' ? `${String(meta.from)} → ${String(meta.to)}` : meta.zone_name ? `zone ${String(meta.zone_name)}` : meta.down_seconds !== undefined ? `down ${num(meta.down_seconds, 1)} s` : '';
      return h(
        'tr',
        {},
        h('td', { text: dateTime(e.timestamp) }),
        h('td', { text: e.type.replace(/_/g, ' ') }),
        h('td', {}, h('span', { class: `badge sev-${e.severity}`, text: e.severity })),
        h('td', { text: e.track_id !== null ? `#${e.track_id}` : '-' }),
        h('td', { text: e.location ? `${num(e.location.x, 1)}, ${num(e.location.y, 1)} m` : '-' }),
        h('td', { class: 'muted', text: detail }),
      );
    });
    replace(
      this.events,
      h('p', { class: 'muted', text: `${total} events in the period${total > list.length ? `, the newest ${list.length} shown` : ''}.` }),
      h('table', { class: 'list' }, h('thead', {}, h('tr', {}, ...['time', 'type', 'severity', 'track', 'location', ''].map((t) => h('th', { text: t })))), h('tbody', {}, ...rows)),
    );
  }

  private resize(): void {
    if (this.occupancy) this.occupancy.setSize({ width: this.width(this.occupancyBox), height: 220 });
    if (this.activity) this.activity.setSize({ width: this.width(this.activityBox), height: 220 });
  }
}
