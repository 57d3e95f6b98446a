/**
 * Builds the web dashboard (`npm run build`, after tsc): bundles `web/src/main.ts` and the CSS it
 * imports with esbuild into `dist/web/assets/` under content-hashed names, writes
 * `dist/web/index.html` pointing at them, and precompresses every file that gains from it
 * (`NAME.br`, `NAME.gz`: at least 1 KiB and 10 % smaller), which the server sends as they are.
 *
 * Usage: node web/build.mjs [--out DIR]   (default dist/web)
 */
import { build } from 'esbuild';
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

const here = dirname(fileURLToPath(import.meta.url));
const outFlag = process.argv.indexOf('--out');
const out = resolve(outFlag > 0 ? process.argv[outFlag + 1] : join(here, '..', 'dist', 'web'));
const assets = join(out, 'assets');

/** Smallest file worth compressing, and the least saving that pays for a Content-Encoding. */
const MIN_BYTES = 1024;
const MIN_SAVING = 0.1;

rmSync(out, { recursive: true, force: true });
mkdirSync(assets, { recursive: true });

const result = await build({
  entryPoints: { app: join(here, 'src', 'main.ts') },
  bundle: true,
  format: 'esm',
  target: ['es2022', 'chrome111', 'firefox111', 'safari16'],
  minify: true,
  sourcemap: false,
  legalComments: 'eof',
  outdir: assets,
  entryNames: '[name]-[hash]',
  assetNames: '[name]-[hash]',
  metafile: true,
  logLevel: 'warning',
});

const files = Object.keys(result.metafile.outputs).map((p) => basename(p));
const js = files.find((f) => f.endsWith('.js'));
const css = files.find((f) => f.endsWith('.css'));
if (!js || !css) throw new Error(`web build: expected one .js and one .css output, got ${files.join(', ')}`);
const html = readFileSync(join(here, 'index.html'), 'utf8').replaceAll('%APP_JS%', `assets/${js}`).replaceAll('%APP_CSS%', `assets/${css}`);
writeFileSync(join(out, 'index.html'), html);

let total = 0;
for (const file of [join(out, 'index.html'), ...readdirSync(assets).map((f) => join(assets, f))]) {
  const raw = readFileSync(file);
  total += raw.length;
  if (raw.length < MIN_BYTES) continue;
  const br = brotliCompressSync(raw, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: raw.length } });
  const gz = gzipSync(raw, { level: 9 });
  if (br.length <= raw.length * (1 - MIN_SAVING)) writeFileSync(`${file}.br`, br);
  if (gz.length <= raw.length * (1 - MIN_SAVING)) writeFileSync(`${file}.gz`, gz);
}
process.stderr.write(`web: ${files.join(', ')} -> ${out} (${(total / 1024).toFixed(1)} KiB before compression)\n`);
