import { existsSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';

/**
 * File paths in ad-hoc SQL (`csipose query`, `POST /store/query`), taken from the data directory
 * instead of the working directory of whichever process runs the query.
 *
 * DuckDB resolves a relative path against the process's working directory and checks it against
 * `allowed_directories` there; its `file_search_path` is consulted only after that check (and,
 * for a path without wildcards, only when the working directory has no such file). So the same
 * `read_parquet('lake/...')` would be refused, or read another file, depending on where
 * `csipose serve` or `csipose query` was started. Before a query runs, the store therefore
 * rewrites the relative paths it finds in file positions to absolute paths:
 *
 * - a string literal that is a positional argument of a file function (`read_parquet`,
 *   `read_csv`, `read_json`, `read_text`, `read_blob`, any other `read_*` or `parquet_*`, `glob`,
 *   `sniff_csv`), also inside a list (`read_parquet(['a.parquet', 'b.parquet'])`);
 * - a string literal right after `FROM` or `JOIN` (DuckDB reads `FROM 'x.parquet'` as a file).
 *
 * Any other string (`WHERE name = 'lake/x'`, named options such as `delim = '/'`, escape strings
 * `E'...'`, strings inside other function calls) is left as written, and so are absolute paths,
 * `~/...` and URLs.
 */

/** Maps a path as written to the absolute path to read, or undefined to leave it alone. */
export type PathResolver = (path: string) => string | undefined;

/** Functions whose positional string arguments are file paths or glob patterns. */
const FILE_FUNCTION = /^(?:read_\w+|parquet_\w+|glob|sniff_csv)$/;
const IDENT_START = /[A-Za-z_\u0080-\uffff]/;
const IDENT_PART = /[A-Za-z0-9_$\u0080-\uffff]/;

/**
 * The paths of a data directory: a relative path is taken from the directory itself
 * (`lake/pose_frames/...`, `exports/...`). A path that begins with the directory's own name
 * (`data/lake/...` for `./data`, as the README and readers started next to the data directory
 * write it) is taken from the folder that holds it, unless the data directory has an entry of
 * that name.
 * @param dataDir the data directory
 * @returns the resolver
 * @example dataDirPaths('/srv/data')('lake/x.parquet') // '/srv/data/lake/x.parquet'
 */
export function dataDirPaths(dataDir: string): PathResolver {
  const root = resolve(dataDir);
  const name = basename(root);
  return (p) => {
    // URL schemes (s3:, http:, hf:) and absolute or home paths are DuckDB's to judge.
    if (p === '' || isAbsolute(p) || p.startsWith('~') || /^[A-Za-z][A-Za-z0-9+.-]*:/.test(p)) return undefined;
    const first = p.replace(/^(?:\.\/)+/, '').split('/')[0];
    if (first === name && !existsSync(join(root, name))) return resolve(dirname(root), p);
    return resolve(root, p);
  };
}

/**
 * Rewrites the relative file paths of one SQL text (see the module comment for which strings
 * count as paths). Comments, quoted identifiers, escape and dollar-quoted strings are skipped as
 * DuckDB's parser reads them; a text DuckDB cannot parse comes back with at most some paths
 * rewritten, and DuckDB then reports its error.
 * @param sql the SQL text
 * @param resolvePath the absolute path for a path as written, or undefined to keep it
 * @returns the text with those literals replaced
 * @example rewriteFilePaths("SELECT * FROM read_parquet('lake/*.parquet')", dataDirPaths('/d')) // "SELECT * FROM read_parquet('/d/lake/*.parquet')"
 */
export function rewriteFilePaths(sql: string, resolvePath: PathResolver): string {
  const n = sql.length;
  let out = '';
  let copied = 0;
  /** The previous token: a lower-cased word, a punctuation character, or `'` for a string. */
  let prev = '';
  /** Per open bracket: whether strings directly inside it are file arguments. */
  const files: boolean[] = [];
  let i = 0;
  while (i < n) {
    const c = sql[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if (c === '-' && sql[i + 1] === '-') {
      const nl = sql.indexOf('\n', i);
      i = nl < 0 ? n : nl + 1;
    } else if (c === '/' && sql[i + 1] === '*') {
      // Block comments nest, as in PostgreSQL, whose grammar DuckDB's parser comes from.
      let depth = 1;
      i += 2;
      while (i < n && depth > 0) {
        const pair = sql.slice(i, i + 2);
        if (pair === '/*' || pair === '*/') {
          depth += pair === '/*' ? 1 : -1;
          i += 2;
        } else i++;
      }
    } else if (c === "'") {
      const start = i;
      let value = '';
      i++;
      for (;;) {
        const q = sql.indexOf("'", i);
        if (q < 0) {
          i = n;
          break;
        }
        value += sql.slice(i, q);
        if (sql[q + 1] === "'") {
          value += "'";
          i = q + 2;
        } else {
          i = q + 1;
          break;
        }
      }
      const inFileCall = files.length > 0 && files[files.length - 1] && (prev === '(' || prev === ',' || prev === '[');
      if (inFileCall || prev === 'from' || prev === 'join') {
        const abs = resolvePath(value);
        if (abs !== undefined) {
          out += sql.slice(copied, start) + `'${abs.replace(/'/g, "''")}'`;
          copied = i;
        }
      }
      prev = "'";
    } else if (c === '"') {
      const end = closingQuote(sql, i + 1, '"');
      prev = sql
        .slice(i + 1, end - 1)
        .replace(/""/g, '"')
        .toLowerCase();
      i = end;
    } else if (c === '$') {
      const tag = /^\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$/.exec(sql.slice(i, i + 66))?.[0];
      if (tag) {
        const close = sql.indexOf(tag, i + tag.length);
        i = close < 0 ? n : close + tag.length;
        prev = "'";
      } else {
        // A parameter ($1, $name): refused later, but lexed as a word here.
        i++;
        while (i < n && IDENT_PART.test(sql[i]!)) i++;
        prev = '$';
      }
    } else if (IDENT_START.test(c)) {
      const start = i;
      while (i < n && IDENT_PART.test(sql[i]!)) i++;
      const word = sql.slice(start, i).toLowerCase();
      if (sql[i] === "'") {
        // A prefixed string: E'..' (backslash escapes), X'..', B'..': never a path here.
        i = closingQuote(sql, i + 1, "'", word === 'e');
        prev = "'";
      } else prev = word;
    } else {
      if (c === '(') files.push(FILE_FUNCTION.test(prev));
      else if (c === '[') files.push(files.length > 0 && files[files.length - 1]! && (prev === '(' || prev === ',' || prev === '['));
      else if (c === '{') files.push(false);
      else if (c === ')' || c === ']' || c === '}') files.pop();
      prev = c;
      i++;
    }
  }
  return copied === 0 ? sql : out + sql.slice(copied);
}

/** The index just past the quote that closes a quoted text starting at `from` (doubled quotes escape; so does `\` when asked). */
function closingQuote(sql: string, from: number, quote: string, backslash = false): number {
  let i = from;
  while (i < sql.length) {
    const ch = sql[i]!;
    if (backslash && ch === '\\') i += 2;
    else if (ch === quote) {
      if (sql[i + 1] === quote) i += 2;
      else return i + 1;
    } else i++;
  }
  return sql.length;
}
