/**
 * Analytics for a chosen period ending now: occupancy over time (`GET /analytics/occupancy`), the
 * activity summary (`GET /analytics/healthcare?metrics=activity_summary`) and the events list
 * (`GET /analytics/events`), drawn with uPlot. Refreshed when shown, on demand, and every minute
 * while shown (the analytics rate limit is 500 requests an hour; this takes 3 or 4 a minute).
 *
 * The period starts as the shortest one that holds everything stored: a service that has run for
 * 12 minutes opens on the last hour, not on 24 hours of nothing. Where the stored data begins is
 * the timestamp of the oldest stored pose frame (`GET /pose/history?limit=1`, Form A, which lists
 * in storage order), asked each time the panel is shown; the time axis then starts there when
 * that is later than the period's start. A period the user picks is kept.
 *
 * Events are filtered by type: falls and alerts by default (activity changes outnumber them many
 * times over), or alerts, falls, activity changes or everything.
 */
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { ApiError, describeError, type Api } from './api.js';
import { dateTime, h, num, replace } from './dom.js';
import type { ActivityEvent } from './types.js';

type Period = 'hour' | 'day' | 'week' | 'month';

/** Each period's length and the occupancy interval that gives it a readable number of points. */
const PERIODS: Record<Period, { label: string; ms: number; interval: string; intervalMs: number }> = {
  hour: { label: 'Last hour', ms: 3_600_000, interval: '5min', intervalMs: 300_000 },
  day: { label: 'Last 24 hours', ms: 86_400_000, interval: '15min', intervalMs: 900_000 },
  week: { label: 'Last 7 days', ms: 7 * 86_400_000, interval: '1hour', intervalMs: 3_600_000 },
  month: { label: 'Last 30 days', ms: 30 * 86_400_000, interval: '1hour', intervalMs: 3_600_000 },
};
const ACTIVITIES = ['standing', 'walking', 'sitting', 'lying'] as const;
const REFRESH_MS = 60_000;
const EVENTS_SHOWN = 100;

/** `event_type` values of `GET /analytics/events` (docs/analytics.md). */
type EventType = 'fall' | 'alert' | 'activity';
type EventFilter = 'important' | 'alert' | 'fall' | 'activity' | 'all';

/** The event filters, in the order offered: what matters first. */
const EVENT_FILTERS: Record<EventFilter, { label: string; noun: string; types: ReadonlyArray<EventType | undefined> }> = {
  important: { label: 'Falls and alerts', noun: 'falls and alerts', types: ['fall', 'alert'] },
  alert: { label: 'Alerts', noun: 'alerts', types: ['alert'] },
  fall: { label: 'Falls and recoveries', noun: 'fall events (falls and recoveries)', types: ['fall'] },
  activity: { label: 'Activity changes', noun: 'activity changes', types: ['activity'] },
  all: { label: 'All events', noun: 'events', types: [undefined] },
};

/** A page of events, in either form's shape (Form A `{events, pagination}`, Form B the array). */
type EventsPage = ActivityEvent[] | { events?: ActivityEvent[]; pagination?: Record<string, unknown> };

interface Occupancy {
  summary: { average_occupancy: number | null; peak_occupancy: number; peak_time: string | null; total_person_hours: number; frames: number };
  time_series: Array<{ timestamp: string; occupancy: number; confidence: number | null }>;
}

/**
 * The shortest period that holds everything stored since `start`.
 * @param start epoch ms of the oldest stored frame; null when nothing is stored
 * @param now epoch ms
 */
export function fittingPeriod(start: number | null, now: number): Period {
  if (start === null) return 'hour';
  for (const p of Object.keys(PERIODS) as Period[]) if (now - start <= PERIODS[p].ms) return p;
  return 'month';
}

const axisStyle = { stroke: '#8b949e', grid: { stroke: 'rgba(139,148,158,0.15)' }, ticks: { stroke: 'rgba(139,148,158,0.3)' } };

export class AnalyticsPanel {
  readonly element: HTMLElement;
  private period: Period = 'day';
  /** The user picked the period: it is no longer fitted to the data. */
  private periodPicked = false;
  /** Epoch ms of the oldest stored frame; null: nothing stored; undefined: not known. */
  private dataStart: number | null | undefined;
  private eventFilter: EventFilter = 'important';
  /** Counts refreshes: only the newest one draws. */
  private generation = 0;
  private readonly periodSelect: HTMLSelectElement;
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
      {
        id: 'analytics-period',
        onchange: (ev: Event) => {
          this.period = (ev.target as HTMLSelectElement).value as Period;
          this.periodPicked = true;
          void this.refresh();
        },
      },
      ...Object.entries(PERIODS).map(([k, p]) => h('option', { value: k, text: p.label, selected: k === this.period })),
    );
    this.periodSelect = select;
    const eventSelect = h(
      'select',
      {
        id: 'events-type',
        'aria-label': 'Which events',
        onchange: (ev: Event) => {
          this.eventFilter = (ev.target as HTMLSelectElement).value as EventFilter;
          void this.refresh();
        },
      },
      ...Object.entries(EVENT_FILTERS).map(([k, f]) => h('option', { value: k, text: f.label, selected: k === this.eventFilter })),
    );
    this.cards = h('div', { class: 'cards' });
    this.occupancyBox = h('div', { id: 'occupancy-chart', class: 'chart' });
    this.activityBox = h('div', { id: 'activity-chart', class: 'chart' });
    this.events = h('div', { id: 'events', class: 'events' });
    this.message = h('p', { class: 'form-message', role: 'status' });
    this.element = h(
      'div',
      { class: 'analytics' },
      h(
        'div',
        { class: 'toolbar' },
        h('label', { class: 'inline' }, 'Period ', select),
        h('button', { type: 'button', onclick: () => void this.refresh() }, 'Refresh'),
        this.message,
      ),
      this.cards,
      h(
        'div',
        { class: 'charts' },
        h('section', { class: 'panel' }, h('h2', { text: 'Occupancy' }), this.occupancyBox),
        h('section', { class: 'panel' }, h('h2', { text: 'Activity (person-minutes)' }), this.activityBox),
      ),
      h('section', { class: 'panel' }, h('header', { class: 'panel-head' }, h('h2', { text: 'Events' }), eventSelect), this.events),
    );
    new ResizeObserver(() => this.resize()).observe(this.element);
  }

  show(): void {
    this.visible = true;
    void this.refresh(true);
  }

  hide(): void {
    this.visible = false;
    clearTimeout(this.timer);
  }

  /**
   * Reads where the stored data begins and, unless the user picked a period, fits the period to it.
   * A failure leaves both as they were (the analytics still load).
   */
  private async findDataStart(): Promise<void> {
    try {
      const r = await this.api.request<{ poses?: Array<{ timestamp: string }> }>('GET', 'pose/history', { form: 'a', query: { limit: 1 } });
      const t = Date.parse(r.data.poses?.[0]?.timestamp ?? '');
      this.dataStart = Number.isFinite(t) ? t : null;
    } catch (e) {
      // 404: nothing stored yet; anything else says nothing about the data.
      if (e instanceof ApiError && e.status === 404) this.dataStart = null;
      else console.warn(describeError(e, 'Finding where the stored data begins'));
    }
    if (!this.periodPicked && this.dataStart !== undefined) {
      this.period = fittingPeriod(this.dataStart, Date.now());
      this.periodSelect.value = this.period;
    }
  }

  private async refresh(first = false): Promise<void> {
    clearTimeout(this.timer);
    // Refreshes overlap (showing the tab, a new period or filter, the timer): only the newest may draw,
    // so a slower earlier answer never replaces what the user asked for since.
    const generation = ++this.generation;
    this.message.className = 'form-message note';
    this.message.textContent = 'Loading…';
    if (first) await this.findDataStart();
    const p = PERIODS[this.period];
    const end = new Date();
    const start = new Date(end.getTime() - p.ms);
    const range = { start_time: start.toISOString(), end_time: end.toISOString() };
    // The axis starts where the data does, when that is inside the period.
    const from = this.dataStart && this.dataStart > start.getTime() ? new Date(this.dataStart) : start;
    try {
      const [occ, health, events] = await Promise.all([
        this.api.request<Occupancy>('GET', 'analytics/occupancy', { query: { ...range, interval: p.interval } }),
        this.api.request<{ activity_summary: Record<string, number> }>('GET', 'analytics/healthcare', {
          query: { period: this.period, metrics: 'activity_summary' },
        }),
        this.loadEvents(range),
      ]);
      if (generation !== this.generation) return;
      this.renderCards(occ.data);
      this.renderOccupancy(occ.data, from, end, p.intervalMs);
      this.renderActivity(health.data.activity_summary);
      this.renderEvents(events.rows, events.text);
      this.message.textContent = `Updated ${end.toLocaleTimeString()}${from !== start ? ` \u00b7 data stored since ${dateTime(from)}` : ''}`;
    } catch (e) {
      if (generation !== this.generation) return;
      this.message.className = 'form-message error';
      this.message.textContent = describeError(e, 'Loading the analytics');
    }
    if (this.visible) this.timer = setTimeout(() => void this.refresh(), REFRESH_MS);
  }

  private renderCards(o: Occupancy): void {
    const s = o.summary;
    const card = (label: string, value: string) =>
      h('div', { class: 'card' }, h('span', { class: 'value', text: value }), h('span', { class: 'label', text: label }));
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

  /**
   * Occupancy as steps: each bucket's mean holds over its interval (the last one until now), so
   * that a few minutes of data read as a line, not as a lone dot. Buckets without frames (nothing
   * was running) are gaps, as the service leaves them out.
   */
  private renderOccupancy(o: Occupancy, start: Date, end: Date, intervalMs: number): void {
    const xs: number[] = [];
    const ys: Array<number | null> = [];
    const buckets = o.time_series.map((p) => ({ t: Date.parse(p.timestamp), v: p.occupancy }));
    buckets.forEach((b, i) => {
      xs.push(b.t / 1000);
      ys.push(b.v);
      const stop = b.t + intervalMs;
      const next = buckets[i + 1];
      if (next && next.t <= stop) return;
      // The end of a run of buckets: hold to the interval's end (or now), then a gap.
      xs.push(Math.min(end.getTime(), stop) / 1000);
      ys.push(b.v);
      if (next) {
        xs.push(stop / 1000 + 0.001);
        ys.push(null);
      }
    });
    const first = xs[0];
    this.occupancy?.destroy();
    this.occupancy = new uPlot(
      {
        width: this.width(this.occupancyBox),
        height: 220,
        // From the period's (or the data's) start, or the start of the first bucket if earlier.
        scales: {
          x: { time: true, min: Math.min(start.getTime() / 1000, first ?? Infinity), max: end.getTime() / 1000 },
          y: { range: (_u, _min, max) => [0, Math.max(1, Math.ceil(max))] },
        },
        axes: [axisStyle, { ...axisStyle, label: 'persons' }],
        series: [
          {},
          {
            label: 'occupancy',
            stroke: '#58a6ff',
            fill: 'rgba(88,166,255,0.15)',
            width: 2,
            paths: uPlot.paths.stepped!({ align: 1 }),
            points: { show: false },
          },
        ],
        legend: { show: false },
      },
      [xs, ys],
      this.occupancyBox,
    );
    if (first === undefined) this.occupancyBox.append(h('p', { class: 'muted', text: 'No pose frames stored in this period.' }));
  }

  private renderActivity(summary: Record<string, number> | undefined): void {
    const ys = ACTIVITIES.map((a) => summary?.[`${a}_minutes`] ?? 0);
    this.activity?.destroy();
    this.activity = new uPlot(
      {
        width: this.width(this.activityBox),
        height: 220,
        scales: { x: { time: false, range: [-0.5, ACTIVITIES.length - 0.5] }, y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] } },
        axes: [
          { ...axisStyle, splits: () => ACTIVITIES.map((_, i) => i), values: () => [...ACTIVITIES] },
          { ...axisStyle, label: 'minutes' },
        ],
        series: [{}, { label: 'minutes', stroke: '#3fb950', fill: 'rgba(63,185,80,0.5)', paths: uPlot.paths.bars!({ size: [0.6] }), points: { show: false } }],
        legend: { show: false },
        cursor: { show: false },
      },
      [ACTIVITIES.map((_, i) => i), ys],
      this.activityBox,
    );
  }

  /**
   * The events of the chosen filter, newest first, at most EVENTS_SHOWN, and a sentence saying how
   * many there are. Read in Form A (`{events, pagination}`, paged by `limit`).
   */
  private async loadEvents(range: { start_time: string; end_time: string }): Promise<{ rows: ActivityEvent[]; text: string }> {
    const f = EVENT_FILTERS[this.eventFilter];
    const pages = await Promise.all(
      f.types.map(async (type) => {
        const r = await this.api.request<EventsPage>('GET', 'analytics/events', {
          form: 'a',
          query: { ...range, limit: EVENTS_SHOWN, ...(type ? { event_type: type } : {}) },
        });
        const body = r.data;
        const rows = Array.isArray(body) ? body : (body.events ?? []);
        const pg = (Array.isArray(body) ? r.pagination : body.pagination) ?? {};
        return { type, rows, total: Number(pg.total_count ?? pg.total ?? rows.length) };
      }),
    );
    const more = (n: number, total: number) => (total > n ? `, the newest ${n} shown` : '');
    if (this.eventFilter !== 'important') {
      const [page] = pages;
      return { rows: page!.rows, text: `${page!.total} ${f.noun} in the period${more(page!.rows.length, page!.total)}.` };
    }
    // A fall that raised an alert is both a fall event and an alert: list it once, as the fall
    // (which says whether an alert was sent, and when the person got up).
    const falls = pages.find((p) => p.type === 'fall')!;
    const alerts = pages.find((p) => p.type === 'alert')!;
    const rows = [...falls.rows, ...alerts.rows.filter((e) => e.type !== 'fall_detection')]
      .sort((a, b) => Date.parse(b.timestamp) - Date.parse(a.timestamp) || (a.event_id < b.event_id ? 1 : -1))
      .slice(0, EVENTS_SHOWN);
    const hidden =
      falls.total > falls.rows.length ||
      alerts.total > alerts.rows.length ||
      rows.length < falls.rows.length + alerts.rows.filter((e) => e.type !== 'fall_detection').length;
    return {
      rows,
      text: `${alerts.total} alerts and ${falls.total} fall events (falls and recoveries) in the period; a fall's alert is listed once, as the fall${hidden ? `; the newest ${rows.length} shown` : ''}.`,
    };
  }

  private renderEvents(list: ActivityEvent[], summary: string): void {
    const rows = list.map((e) => {
      const meta = e.metadata ?? {};
      const what =
        e.type === 'activity_change'
          ? `${String(meta.from)} → ${String(meta.to)}`
          : meta.zone_name
            ? `zone ${String(meta.zone_name)}`
            : meta.down_seconds !== undefined
              ? `down ${num(meta.down_seconds, 1)} s`
              : '';
      const detail = e.actions_taken?.includes('alert_sent') ? `${what}${what ? ' · ' : ''}alert sent` : what;
      return h(
        'tr',
        { 'data-type': e.type },
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
      h('p', { class: 'muted', text: summary }),
      h(
        'table',
        { class: 'list' },
        h('thead', {}, h('tr', {}, ...['time', 'type', 'severity', 'track', 'location', ''].map((t) => h('th', { text: t })))),
        h('tbody', {}, ...rows),
      ),
    );
  }

  private resize(): void {
    if (this.occupancy) this.occupancy.setSize({ width: this.width(this.occupancyBox), height: 220 });
    if (this.activity) this.activity.setSize({ width: this.width(this.activityBox), height: 220 });
  }
}
