/** Deepest nesting of arrays and objects a request body or message may have. */
export const MAX_JSON_DEPTH = 64;

/**
 * Whether JSON text nests arrays and objects deeper than `max`, found in one pass over the text
 * without parsing it (brackets inside strings do not count). A body that does is refused before
 * `JSON.parse` and before any code walks it, since a deep enough value exhausts the stack of
 * whatever recurses over it.
 * @param text JSON text (valid or not)
 * @param max the deepest nesting allowed
 * @returns true when some value is nested deeper
 * @example jsonDepthExceeds('[[[]]]', 2) // true
 */
export function jsonDepthExceeds(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 0x5c)
        i++; // backslash: skip the escaped character
      else if (ch === 0x22) inString = false;
    } else if (ch === 0x22) inString = true;
    else if (ch === 0x5b || ch === 0x7b) {
      if (++depth > max) return true;
    } else if (ch === 0x5d || ch === 0x7d) depth--;
  }
  return false;
}
