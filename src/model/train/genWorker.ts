/**
 * Worker thread of `generateAll`: simulates the scenarios it is sent, one message each, and posts
 * their windows back (buffers transferred, not copied).
 */
import { parentPort } from 'node:worker_threads';
import { generateScenario } from './dataset.js';
import type { ScenarioRecipe } from './recipe.js';

const port = parentPort;
if (port) {
  port.on('message', (m: { index: number; recipe: ScenarioRecipe; hop: number; mirror: boolean }) => {
    try {
      const data = generateScenario(m.recipe, m.hop, m.mirror);
      port.postMessage({ index: m.index, data }, [
        data.features.buffer as ArrayBuffer,
        data.targets.buffer as ArrayBuffer,
        data.personCounts.buffer as ArrayBuffer,
      ]);
    } catch (e) {
      port.postMessage({ index: m.index, error: e instanceof Error ? `${e.message}\n${e.stack ?? ''}` : String(e) });
    }
  });
}
