import { existsSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The folder of this package (the one with its `package.json`), found from this module whether it
 * runs from `src/` (tests) or `dist/src/` (the service).
 * @returns an absolute path
 */
export function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  return dir;
}

/**
 * Where a configured file path points. An absolute path stays; a relative one is taken from the
 * working directory when a file is there, else from the package (so the default
 * `models/csipose-pose.onnx`, the shipped model, is found wherever the service starts from); when
 * neither exists, the working directory's, so that the error names the path the user meant.
 * @param path as configured
 * @param cwd the working directory (default `process.cwd()`)
 * @returns an absolute path
 * @example
 * resolveInstalled('models/csipose-pose.onnx') // '/opt/csipose/models/csipose-pose.onnx' from any folder
 */
export function resolveInstalled(path: string, cwd: string = process.cwd()): string {
  if (isAbsolute(path)) return path;
  const here = resolve(cwd, path);
  if (existsSync(here)) return here;
  const shipped = resolve(packageRoot(), path);
  return existsSync(shipped) ? shipped : here;
}
