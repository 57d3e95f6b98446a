/**
 * Secrets inside configuration values: the password of a URL's userinfo, as in the source
 * `mqtt://user:password@host:1883/csi/#?format=esp32`. Whoever reads the configuration (every role,
 * through `GET /config`, `PUT /config` answers and `POST /system/start`) sees it masked,
 * `mqtt://user:***@host:1883/...`, and no log line carries it. A field holds such a secret when
 * its schema says `secret: 'url-password'` (see schema.ts).
 *
 * Masking must survive a round trip: a client that PUTs back what it read sends the mask, and the
 * store then keeps the password it holds (see {@link restoreMasked}) instead of storing "***".
 */

import { FIELDS, type FieldDef } from './schema.js';
import type { FieldError } from './validate.js';

/** What a masked password reads as. */
export const SECRET_MASK = '***';

/** Canonical paths of the fields whose values may carry a URL password. */
export const SECRET_PATHS: ReadonlySet<string> = new Set(FIELDS.filter((f) => isSecretField(f.def)).map((f) => f.path));

function isSecretField(def: FieldDef): boolean {
  return def.type === 'string' && def.secret === 'url-password';
}

/** A URL cut around its password; undefined when it has none. */
interface Parts {
  /** Up to and including the `:` after the user name. */
  head: string;
  user: string;
  password: string;
  /** From the `@` on. */
  tail: string;
}

/**
 * Finds the password of `scheme://user:password@host...`. The authority ends at the first `/` or
 * `?` (a `#` may belong to an MQTT topic filter, so it does not end it) and the userinfo at its
 * last `@`, exactly as the MQTT source reads its URI, so what is masked is what would be used.
 */
function split(value: string): Parts | undefined {
  const m = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.exec(value);
  if (!m) return undefined;
  const start = m[0].length;
  let end = value.length;
  for (let i = start; i < value.length; i++) {
    const ch = value.charCodeAt(i);
    if (ch === 0x2f || ch === 0x3f) {
      end = i;
      break;
    }
  }
  const at = value.lastIndexOf('@', end - 1);
  if (at < start) return undefined;
  const colon = value.indexOf(':', start);
  if (colon < 0 || colon > at || colon === at - 1) return undefined;
  return { head: value.slice(0, colon + 1), user: value.slice(start, colon), password: value.slice(colon + 1, at), tail: value.slice(at) };
}

/**
 * A URL with the password of its userinfo replaced by {@link SECRET_MASK}; anything else as is.
 * @param value any configuration value
 * @returns the masked value (the same value when there is nothing to mask)
 * @example maskUrlPassword('mqtt://csi:hunter2@10.0.0.2/csi/%23?format=esp32') // 'mqtt://csi:***@10.0.0.2/csi/%23?format=esp32'
 */
export function maskUrlPassword<T>(value: T): T {
  if (typeof value !== 'string') return value;
  // A list of sources (`hardware.source`: URIs separated by white space): each URI on its own.
  if (/\s/.test(value)) return value.replace(/\S+/g, (uri) => maskUrlPassword(uri)) as T;
  const p = split(value);
  return p ? (`${p.head}${SECRET_MASK}${p.tail}` as T) : value;
}

/** Where a URL's authority ends in free text: white space, a quote, `/` or `?`. */
function authorityEnd(text: string, from: number): number {
  let i = from;
  while (i < text.length) {
    const ch = text.charCodeAt(i);
    if (ch <= 0x20 || ch === 0x22 || ch === 0x27 || ch === 0x2f || ch === 0x3f) break;
    i++;
  }
  return i;
}

/**
 * Masks every URL password found in free text (a log line, an error message), e.g. inside
 * `got "mqtt://u:pw@host/t"`: after each `://`, from the first `:` to the last `@` before the
 * authority ends. One pass, linear in the text.
 * @param text any text
 * @returns the text with each such password replaced by {@link SECRET_MASK}
 */
export function maskUrlPasswordsIn(text: string): string {
  let out = '';
  let from = 0;
  for (let i = text.indexOf('://'); i >= 0; i = text.indexOf('://', i + 3)) {
    const start = i + 3;
    const end = authorityEnd(text, start);
    const at = text.lastIndexOf('@', end - 1);
    if (at < start) continue;
    const colon = text.indexOf(':', start);
    if (colon < 0 || colon >= at - 1) continue;
    out += text.slice(from, colon + 1) + SECRET_MASK;
    from = at;
  }
  return from === 0 ? text : out + text.slice(from);
}

/**
 * Masks what follows `head` (`scheme://user:`) in a message up to the `@` that ends the password
 * or, where the message cut the value short before it, to the end of the quoted value.
 */
function maskAfter(message: string, head: string): string {
  let out = '';
  let from = 0;
  for (let i = message.indexOf(head); i >= 0; i = message.indexOf(head, from)) {
    const start = i + head.length;
    let q = start;
    // The end of the quoted value: an unescaped quote.
    while (q < message.length && !(message.charCodeAt(q) === 0x22 && message.charCodeAt(q - 1) !== 0x5c)) q++;
    const at = message.lastIndexOf('@', q - 1);
    const end = at >= start ? at : q;
    out += message.slice(from, start) + SECRET_MASK;
    from = end;
  }
  return out + message.slice(from);
}

/**
 * Field errors with the secrets in their received values and messages masked (a refused update
 * is answered and may be logged; the password it carried must not be).
 * @param errors field errors
 * @returns new errors, masked
 */
export function maskErrors(errors: readonly FieldError[]): FieldError[] {
  return errors.map((e) => {
    let message = e.message;
    const p = typeof e.received_value === 'string' ? split(e.received_value) : undefined;
    // The value's own password first (messages quote values as JSON, perhaps cut short), then
    // anything else URL-shaped.
    if (p && p.password !== SECRET_MASK) {
      for (const pw of new Set([p.password, JSON.stringify(p.password).slice(1, -1)])) message = message.split(pw).join(SECRET_MASK);
      for (const head of new Set([p.head, JSON.stringify(p.head).slice(1, -1)])) message = maskAfter(message, head);
    }
    message = maskUrlPasswordsIn(message);
    return e.received_value === undefined ? { ...e, message } : { ...e, message, received_value: maskUrlPassword(e.received_value) };
  });
}

/**
 * The value an update means for a secret field: a URL whose password is the mask takes the
 * password held now, when the URL held now has one for the same user (a client writing back what
 * it read, perhaps with another host or topic). A new password, or none, is taken as written.
 * @param path the field's canonical path
 * @param written the value in the update
 * @param current the value held now
 * @returns the value to store, or a field error when the mask stands for no password held
 */
export function restoreMasked(path: string, written: unknown, current: unknown): { value: unknown } | { error: FieldError } {
  if (!SECRET_PATHS.has(path) || typeof written !== 'string') return { value: written };
  // A list of URIs: each restored against the URI at the same place in the list held now.
  if (/\s/.test(written.trim())) {
    const held = typeof current === 'string' ? current.trim().split(/\s+/) : [];
    let i = 0;
    let error: FieldError | undefined;
    const value = written.replace(/\S+/g, (uri) => {
      const r = restoreMasked(path, uri, held[i++]);
      if ('error' in r) {
        error ??= r.error;
        return uri;
      }
      return r.value as string;
    });
    return error ? { error: { ...error, received_value: written } } : { value };
  }
  const w = split(written);
  if (!w || w.password !== SECRET_MASK) return { value: written };
  const c = typeof current === 'string' ? split(current) : undefined;
  if (c && c.user === w.user) return { value: `${w.head}${c.password}${w.tail}` };
  return {
    error: {
      field: path,
      message: `${path} has the password ${SECRET_MASK}, which stands for the password set now, but there is none for user "${w.user}": give the real password (or leave ${path} out to keep the current value)`,
      received_value: written,
    },
  };
}
