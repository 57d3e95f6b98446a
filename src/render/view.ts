import type { PoseFrame } from '../pose/types.js';
import { frameBody, renderPerson, selected, type Form, type FrameRenderOptions } from './frame.js';

/** What a reader asks of a frame: the query of `GET /pose/latest`, a WebSocket subscription's filters. */
export interface FrameShape {
  form: Form;
  minConfidence: number;
  includeKeypoints: boolean;
  includeDensePose: boolean;
  /** Only these persons (rendered ids); all when absent. */
  personIds?: readonly number[];
}

/** Renderings kept per frame; a reader asking for more distinct shapes still gets answers, uncached. */
const MAX_SHAPES = 64;

/**
 * Stands for the persons while a frame's other fields are serialised; its JSON is then replaced by
 * the persons' own. A name whose JSON holds the same text (a quote and control characters) makes
 * it appear twice, and such a frame is serialised as it is.
 */
const PERSONS_MARK = '\u0000persons\u0000';
const PERSONS_MARK_JSON = JSON.stringify(PERSONS_MARK);

/**
 * A pose frame as the service's outlets see it: the frame and its renderings, each made once.
 * Every outlet that sends the same bytes shares them (the latest-frame cache, the WebSocket
 * fan-out, MQTT): a person is rendered once per (form, keypoints, dense pose) however many
 * filter sets select it, and a whole frame is serialised once per distinct shape.
 *
 * @example
 * const view = new PoseFrameView(frame, 1, 'live');
 * view.json({ form: 'b', minConfidence: 0.5, includeKeypoints: true, includeDensePose: false });
 */
export class PoseFrameView {
  private readonly persons = new Map<string, Array<Record<string, unknown>>>();
  /** Each rendered person as JSON, by the same key as {@link persons}. */
  private readonly personTexts = new Map<string, string[]>();
  private readonly texts = new Map<string, string>();

  /**
   * @param frame the pose frame (never mutated)
   * @param routerCount distinct CSI sources feeding its environment when it was made (Form A metadata)
   * @param pipeline the pipeline that made it (metadata `processing_pipeline` / `processing_mode`)
   */
  constructor(
    readonly frame: PoseFrame,
    readonly routerCount: number,
    readonly pipeline: string,
  ) {}

  /** Every person of the frame rendered in a form, with or without keypoints and dense pose, once. */
  private rendered(form: Form, includeKeypoints: boolean, includeDensePose: boolean): Array<Record<string, unknown>> {
    const key = `${form}${includeKeypoints ? 1 : 0}${includeDensePose ? 1 : 0}`;
    let out = this.persons.get(key);
    if (!out) {
      out = this.frame.persons.map((p) => renderPerson(p, form, { includeKeypoints, includeDensePose }));
      this.persons.set(key, out);
    }
    return out;
  }

  /** Every rendered person as JSON, once: the filter sets that select a person share its text. */
  private renderedJson(form: Form, includeKeypoints: boolean, includeDensePose: boolean): string[] {
    const key = `${form}${includeKeypoints ? 1 : 0}${includeDensePose ? 1 : 0}`;
    let out = this.personTexts.get(key);
    if (!out) {
      out = this.rendered(form, includeKeypoints, includeDensePose).map((p) => JSON.stringify(p));
      this.personTexts.set(key, out);
    }
    return out;
  }

  /**
   * The frame in a shape, as an object (persons shared with other shapes: do not mutate).
   * @param s the shape
   * @returns the Form A or Form B pose frame
   */
  render(s: FrameShape): Record<string, unknown> {
    const all = this.rendered(s.form, s.includeKeypoints, s.includeDensePose);
    const o: Pick<FrameRenderOptions, 'minConfidence' | 'personIds'> = s.personIds
      ? { minConfidence: s.minConfidence, personIds: s.personIds }
      : { minConfidence: s.minConfidence };
    const persons = all.filter((_, i) => selected(this.frame.persons[i]!, o));
    return frameBody(this.frame, s.form, { routerCount: this.routerCount, pipeline: this.pipeline }, persons);
  }

  /**
   * The frame in a shape as JSON text, made once per shape (optionally wrapped by `wrap`, whose
   * result is what is cached: the WebSocket message around the frame, say).
   * @param s the shape
   * @param key a cache key for `wrap` (callers with different wrappings must pass different keys)
   * @param wrap turns the rendered frame into the object to serialise
   * @returns JSON text
   */
  json(s: FrameShape, key = '', wrap?: (frame: Record<string, unknown>) => unknown): string {
    const k = `${key}|${s.form}|${s.minConfidence}|${s.includeKeypoints}|${s.includeDensePose}|${s.personIds?.join(',') ?? '*'}`;
    let text = this.texts.get(k);
    if (text === undefined) {
      text = this.serialise(s, wrap);
      if (this.texts.size < MAX_SHAPES) this.texts.set(k, text);
    }
    return text;
  }

  /**
   * The text of {@link json}, made from each person's JSON (serialised once per frame and form)
   * and the rest of the frame serialised around a mark where the persons go: what
   * `JSON.stringify(wrap(render(s)))` gives, character for character, without serialising the
   * persons again for every filter set.
   */
  private serialise(s: FrameShape, wrap?: (frame: Record<string, unknown>) => unknown): string {
    const texts = this.renderedJson(s.form, s.includeKeypoints, s.includeDensePose);
    const o: Pick<FrameRenderOptions, 'minConfidence' | 'personIds'> = s.personIds
      ? { minConfidence: s.minConfidence, personIds: s.personIds }
      : { minConfidence: s.minConfidence };
    let persons = '';
    for (let i = 0; i < texts.length; i++) {
      if (!selected(this.frame.persons[i]!, o)) continue;
      persons += persons.length === 0 ? texts[i]! : `,${texts[i]!}`;
    }
    const body = frameBody(this.frame, s.form, { routerCount: this.routerCount, pipeline: this.pipeline }, PERSONS_MARK as unknown as unknown[]);
    const shell = JSON.stringify(wrap ? wrap(body) : body);
    const at = shell.indexOf(PERSONS_MARK_JSON);
    // A wrapper that leaves the persons out, or repeats them: serialised as it is.
    if (at < 0 || shell.indexOf(PERSONS_MARK_JSON, at + 1) >= 0) return JSON.stringify(wrap ? wrap(this.render(s)) : this.render(s));
    return `${shell.slice(0, at)}[${persons}]${shell.slice(at + PERSONS_MARK_JSON.length)}`;
  }
}
