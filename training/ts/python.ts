/**
 * The Python side of training (training/, PyTorch): where it is and whether it can run. The
 * service never needs it; `npm run train` and the tests that train do.
 *
 * Debian's `python3-torch` is seen only by Debian's own interpreter, `/usr/bin/python3` (another
 * python may come first on PATH); `CSIPOSE_PYTHON` names another one.
 */
import { spawnSync } from 'node:child_process';

/** The interpreter training runs with. */
export const PYTHON = process.env.CSIPOSE_PYTHON ?? '/usr/bin/python3';
/** What a machine needs for training, as one apt-get line. */
export const TRAINING_PACKAGES = 'python3-torch python3-onnx python3-scipy libopenblas0-pthread';
export const INSTALL_HINT = `apt-get install -y ${TRAINING_PACKAGES}`;

/** Whether {@link PYTHON} can import torch, onnx and scipy; why not otherwise. */
export function trainingPythonProblem(): string | null {
  const r = spawnSync(PYTHON, ['-c', 'import torch, onnx, scipy.optimize; print(torch.__version__)'], { encoding: 'utf8', timeout: 120_000 });
  if (r.error) return `${PYTHON} cannot run (${r.error.message}): ${INSTALL_HINT}`;
  if (r.status !== 0) {
    const last = (r.stderr || '').trim().split('\n').pop() ?? '';
    return `${PYTHON} cannot import torch, onnx and scipy (${last}): ${INSTALL_HINT}`;
  }
  return null;
}

/**
 * Installs the training packages with apt-get when this process may (root, apt-get present).
 * @returns null when training can run now, else why not (with the line to run)
 */
export function ensureTrainingPython(): string | null {
  let problem = trainingPythonProblem();
  if (problem === null) return null;
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  const apt = spawnSync('sh', ['-c', 'command -v apt-get'], { encoding: 'utf8' }).status === 0;
  if (!root || !apt) return problem;
  spawnSync('sh', ['-c', `apt-get update >/dev/null 2>&1; DEBIAN_FRONTEND=noninteractive apt-get install -y ${TRAINING_PACKAGES} >/dev/null 2>&1`], {
    stdio: 'ignore',
    timeout: 1_800_000,
  });
  problem = trainingPythonProblem();
  return problem;
}
