/**
 * The configuration form, generated from `GET /config/schema`: one control per setting of the
 * schema (a checkbox, a list of the allowed values, a text field, or JSON for lists such as the
 * zones), filled from `GET /config` in Form A (whose names are the schema's). Submitting sends
 * `PUT /config` with only the changed fields; the server validates, and its field-level messages
 * (422 `details.field_errors`) appear under the fields they name. The browser checks nothing
 * itself (the form is `novalidate`): the server is the one place the rules live.
 */
import { ApiError, describeError, type Api } from './api.js';
import { h, replace } from './dom.js';

/** A node of the JSON schema the service serves. */
interface SchemaNode {
  type?: string | string[];
  description?: string;
  properties?: Record<string, SchemaNode>;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  default?: unknown;
  'x-unit'?: string;
  'x-requires-restart'?: boolean;
}

/** One setting's control and how to read it back. */
interface Field {
  path: string;
  node: SchemaNode;
  root: HTMLElement;
  error: HTMLElement;
  /** The value to send, or an error message when the text cannot become a value at all. */
  read(): { value: unknown } | { invalid: string };
  write(v: unknown): void;
  setDisabled(d: boolean): void;
}

type Json = Record<string, unknown>;

const typesOf = (n: SchemaNode): string[] => (Array.isArray(n.type) ? n.type : n.type ? [n.type] : []);

function get(obj: unknown, path: string): unknown {
  return path.split('.').reduce<unknown>((o, k) => (o && typeof o === 'object' ? (o as Json)[k] : undefined), obj);
}

function set(obj: Json, path: string, v: unknown): void {
  const keys = path.split('.');
  let o = obj;
  for (const k of keys.slice(0, -1)) o = (o[k] ??= {}) as Json;
  o[keys.at(-1)!] = v;
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** A number when the text is one, else the text as typed (so that the server names the mistake). */
function numberOrText(text: string): unknown {
  const t = text.trim();
  return t !== '' && Number.isFinite(Number(t)) ? Number(t) : text;
}

let uid = 0;

function control(path: string, node: SchemaNode): Pick<Field, 'read' | 'write' | 'setDisabled'> & { input: HTMLElement } {
  const id = `cfg-${++uid}`;
  const types = typesOf(node);
  if (types.includes('boolean')) {
    const input = h('input', { type: 'checkbox', id, name: path });
    return { input, read: () => ({ value: input.checked }), write: (v) => (input.checked = v === true), setDisabled: (d) => (input.disabled = d) };
  }
  if (node.enum && node.enum.length > 1) {
    const input = h('select', { id, name: path }, ...node.enum.map((v) => h('option', { value: JSON.stringify(v), text: String(v) })));
    return {
      input,
      read: () => ({ value: JSON.parse(input.value) as unknown }),
      write: (v) => (input.value = JSON.stringify(v)),
      setDisabled: (d) => (input.disabled = d),
    };
  }
  if (types.includes('array') || types.includes('object')) {
    const input = h('textarea', { id, name: path, rows: 4, spellcheck: false });
    return {
      input,
      read: () => {
        try {
          return { value: JSON.parse(input.value) as unknown };
        } catch (e) {
          return { invalid: `not valid JSON: ${(e as Error).message}` };
        }
      },
      write: (v) => (input.value = JSON.stringify(v, null, 1)),
      setDisabled: (d) => (input.disabled = d),
    };
  }
  const numeric = types.includes('number') || types.includes('integer');
  const input = h('input', {
    type: 'text',
    id,
    name: path,
    inputMode: numeric ? (types.includes('integer') ? 'numeric' : 'decimal') : 'text',
    autocomplete: 'off',
    spellcheck: false,
  });
  return {
    input,
    read: () => ({ value: numeric ? numberOrText(input.value) : input.value === '' && types.includes('null') ? null : input.value }),
    write: (v) => (input.value = v === null || v === undefined ? '' : String(v)),
    setDisabled: (d) => (input.disabled = d),
  };
}

/** The hint under a field: what it does, its unit and range, default, and whether it needs a restart. */
function hint(node: SchemaNode): string {
  const parts = [node.description ?? ''];
  if (node.minimum !== undefined && node.maximum !== undefined) parts.push(`${node.minimum} to ${node.maximum}${node['x-unit'] ? ` ${node['x-unit']}` : ''}`);
  if (node.default !== undefined && typeof node.default !== 'object') parts.push(`default ${JSON.stringify(node.default)}`);
  return parts.filter(Boolean).join(' · ');
}

export class ConfigForm {
  readonly element: HTMLElement;
  private readonly form: HTMLFormElement;
  private readonly message: HTMLElement;
  private readonly fields: Field[] = [];
  private values: Json = {};
  private canEdit = false;

  /**
   * @param api the session's client
   * @param onConfig receives the configuration as it now is, once loaded and after each save
   */
  constructor(
    private readonly api: Api,
    private readonly onConfig: (config: Json) => void,
  ) {
    this.message = h('p', { class: 'form-message', role: 'status' });
    this.form = h('form', { id: 'config-form', novalidate: true, onsubmit: (ev: Event) => (ev.preventDefault(), void this.save()) });
    this.element = h('section', { class: 'panel config' }, h('header', { class: 'panel-head' }, h('h2', { text: 'Configuration' })), this.message, this.form);
  }

  /** Loads the schema and the values and builds the form (2 requests of the configuration rate limit); `canEdit` is false below the admin role. */
  async load(canEdit: boolean): Promise<void> {
    this.canEdit = canEdit;
    try {
      const [schema, config] = await Promise.all([
        this.api.request<{ schema: SchemaNode }>('GET', 'config/schema', { form: 'a' }),
        this.api.request<Json>('GET', 'config', { form: 'a' }),
      ]);
      this.values = config.data;
      this.build(schema.data.schema);
      this.onConfig(this.values);
      this.say(canEdit ? '' : 'Changing the configuration needs the admin role: the form is read-only.', 'note');
    } catch (e) {
      this.say(describeError(e, 'Loading the configuration'), 'error');
    }
  }

  /** Another role (the server said so): editing on or off. */
  setEditable(canEdit: boolean): void {
    this.canEdit = canEdit;
    for (const f of this.fields) f.setDisabled(!canEdit);
    this.form.querySelectorAll('button').forEach((b) => (b.hidden = !canEdit));
  }

  private build(schema: SchemaNode): void {
    this.fields.length = 0;
    const groups: HTMLElement[] = [];
    const walk = (node: SchemaNode, path: string, into: HTMLElement) => {
      for (const [key, child] of Object.entries(node.properties ?? {})) {
        const p = path ? `${path}.${key}` : key;
        if (child.properties) {
          const fieldset = h('fieldset', { class: 'group' }, h('legend', { text: key, title: child.description ?? '' }));
          walk(child, p, fieldset);
          into.append(fieldset);
        } else into.append(this.field(p, key, child));
      }
    };
    for (const [key, node] of Object.entries(schema.properties ?? {})) {
      const body = h('div', { class: 'group-body' });
      if (node.properties) walk(node, key, body);
      else body.append(this.field(key, key, node));
      groups.push(
        h(
          'details',
          { class: 'group', 'data-group': key },
          h('summary', {}, h('strong', { text: key }), h('span', { class: 'hint', text: node.description ?? '' })),
          body,
        ),
      );
    }
    replace(
      this.form,
      ...groups,
      h(
        'div',
        { class: 'actions' },
        h('button', { type: 'submit', class: 'primary', hidden: !this.canEdit }, 'Save changes'),
        h('button', { type: 'button', hidden: !this.canEdit, onclick: () => this.fill() }, 'Undo edits'),
      ),
    );
    this.fill();
    this.setEditable(this.canEdit);
  }

  private field(path: string, key: string, node: SchemaNode): HTMLElement {
    const c = control(path, node);
    const error = h('small', { class: 'field-error', role: 'alert' });
    const root = h(
      'div',
      { class: 'field', 'data-path': path },
      h('label', { for: c.input.id }, key, node['x-requires-restart'] ? h('span', { class: 'tag', text: 'restart' }) : null),
      c.input,
      h('small', { class: 'hint', text: hint(node) }),
      error,
    );
    this.fields.push({ path, node, root, error, read: c.read, write: c.write, setDisabled: c.setDisabled });
    return root;
  }

  /** Puts the loaded values into the controls and clears the messages. */
  private fill(): void {
    for (const f of this.fields) {
      f.write(get(this.values, f.path));
      f.error.textContent = '';
      f.root.classList.remove('invalid');
    }
  }

  private say(text: string, kind: 'note' | 'error' | 'ok'): void {
    this.message.textContent = text;
    this.message.className = `form-message ${kind}`;
  }

  /** The field an error names: its own path, or the nearest setting above it (`environment.zones[0].id`). */
  private fieldFor(name: string): Field | undefined {
    let best: Field | undefined;
    for (const f of this.fields) {
      if (name === f.path || name.startsWith(`${f.path}.`) || name.startsWith(`${f.path}[`)) {
        if (!best || f.path.length > best.path.length) best = f;
      }
    }
    return best;
  }

  private showError(f: Field, message: string): void {
    f.error.textContent = message;
    f.root.classList.add('invalid');
    const group = f.root.closest('details');
    if (group) group.open = true;
  }

  private async save(): Promise<void> {
    if (!this.canEdit) return;
    const changes: Json = {};
    const changed: Field[] = [];
    let invalid = 0;
    for (const f of this.fields) {
      f.error.textContent = '';
      f.root.classList.remove('invalid');
      const r = f.read();
      if ('invalid' in r) {
        this.showError(f, r.invalid);
        invalid++;
      } else if (!same(r.value, get(this.values, f.path))) {
        set(changes, f.path, r.value);
        changed.push(f);
      }
    }
    if (invalid) return this.say('Correct the marked fields first.', 'error');
    if (!changed.length) return this.say('Nothing changed.', 'note');
    this.say('Saving…', 'note');
    try {
      const r = await this.api.request<{ changes_applied: string[]; restart_required: boolean; validation_warnings: string[] }>('PUT', 'config', {
        form: 'a',
        body: changes,
      });
      for (const f of changed) set(this.values, f.path, get(changes, f.path));
      const restart = r.data.restart_required ? ` ${r.data.validation_warnings.join('; ')}` : '';
      this.say(`Saved: ${r.data.changes_applied.join(', ')}.${restart}`, 'ok');
      this.onConfig(this.values);
    } catch (e) {
      const errors = e instanceof ApiError ? e.fieldErrors : [];
      const unplaced: string[] = [];
      for (const fe of errors) {
        const f = this.fieldFor(fe.field);
        if (f) this.showError(f, fe.message);
        else unplaced.push(fe.message);
      }
      if (errors.length) {
        this.say(
          `The server refused ${errors.length === 1 ? 'a field' : `${errors.length} fields`}; nothing was changed.${unplaced.length ? ` ${unplaced.join(' ')}` : ''}`,
          'error',
        );
        this.form.querySelector<HTMLElement>('.field.invalid')?.scrollIntoView({ block: 'center' });
      } else this.say(describeError(e, 'Saving the configuration'), 'error');
    }
  }
}
