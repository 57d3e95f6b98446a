/** Small DOM helpers: the dashboard builds its few elements by hand, without a framework. */

type Child = Node | string | number | null | undefined | false;

/** Attributes, properties and listeners of {@link h}. */
export type Props = Record<string, unknown> & {
  class?: string;
  text?: string;
};

/**
 * Creates an element. `class` sets the class name, `text` the text content, `on<event>` adds a
 * listener, a key the element has as a property (`disabled`, `value`, `checked`, `type`...) sets
 * that property, anything else an attribute (`aria-*`, `data-*`, `role`, `for`). Never `style`:
 * the page's Content-Security-Policy refuses inline style attributes.
 * @param tag the tag name
 * @param props see above
 * @param children nodes or text; null, undefined and false are skipped
 * @returns the element
 * @example h('button', { class: 'primary', onclick: () => save() }, 'Save')
 */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, props: Props = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (v === undefined || v === null) continue;
    if (k === 'class') el.className = String(v);
    else if (k === 'text') el.textContent = String(v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v as EventListener);
    else if (k in el && !k.includes('-')) (el as unknown as Record<string, unknown>)[k] = v;
    else el.setAttribute(k, String(v));
  }
  append(el, ...children);
  return el;
}

/** Appends children (text or nodes), skipping empty ones. */
export function append(el: Element, ...children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.append(typeof c === 'number' ? String(c) : c);
  }
}

/** Replaces an element's children. */
export function replace(el: Element, ...children: Child[]): void {
  el.replaceChildren();
  append(el, ...children);
}

/** A local time of day, `HH:MM:SS`. */
export function clock(t: string | number | Date): string {
  const d = new Date(t);
  return Number.isNaN(d.getTime()) ? '-' : d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false });
}

/** A local date and time, `YYYY-MM-DD HH:MM:SS`. */
export function dateTime(t: string | number | Date): string {
  const d = new Date(t);
  if (Number.isNaN(d.getTime())) return '-';
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${clock(d)}`;
}

/** A number with at most `digits` decimals, '-' when absent. */
export function num(v: unknown, digits = 1): string {
  return typeof v === 'number' && Number.isFinite(v) ? String(Math.round(v * 10 ** digits) / 10 ** digits) : '-';
}

/** A duration in seconds as `1 d 2 h`, `3 h 4 min`, `5 min 6 s` or `7 s`. */
export function duration(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  const d = Math.floor(s / 86400);
  const hr = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  if (d) return `${d} d ${hr} h`;
  if (hr) return `${hr} h ${m} min`;
  if (m) return `${m} min ${s % 60} s`;
  return `${s} s`;
}
