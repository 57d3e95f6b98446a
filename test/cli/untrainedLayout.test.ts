import { existsSync } from 'node:fs';
import { beforeAll, expect, it } from 'vitest';
import { ensureBuilt, ndjson, runCli } from '../helpers/cli.js';
import { describeWithSamples, sample } from '../helpers/samples.js';
import { TRAINED_MODEL } from '../helpers/server.js';

/**
 * Issue 17, item 12a, the command line: `features | infer` on CSI of a layout the shipped model was
 * not trained on is refused at its first window, with the layout named and a non-zero exit; it
 * used to print a person at confidence 1 and exit 0.
 */
describeWithSamples('csipose pipe ... | features | infer on untrained layouts', () => {
  beforeAll(() => ensureBuilt(), 120_000);
  const itWithModel = existsSync(TRAINED_MODEL) ? it : it.skip;

  itWithModel('13 ESP32 packets: exit 1, no pose, the layout named on stderr', async () => {
    // The raw bytes go through the `esp32` decoder stage, which names the frames' source `esp32`.
    const r = await runCli(['pipe', `file:${sample('esp32/example_csi.csv')} | esp32 | sanitize | window size=8 hop=1 | features | infer | ndjson`]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(
      /^csipose: the model csipose-pose-\S+ was not trained on the CSI layout of esp32: 1x1 antennas, 64 subcarriers spanning 20 MHz, 2\.4 GHz; not trained on 64 subcarriers spanning 20 MHz \(trained: 30 spanning 20 MHz, 56 spanning 20 MHz, 114 spanning 40 MHz\); 2\.4 GHz \(trained: 5 GHz\)$/m,
    );
  });

  itWithModel('Intel 5300 log: the 3x1 windows are inferred, then the first 3x2 window stops it, naming 3x2', async () => {
    // 29 records: 10 of 3x1, 9 of 3x2, 10 of 3x3; 8-frame windows give 3 of 3x1 before the first 3x2 one.
    const r = await runCli(['pipe', `file:${sample('intel5300/log.all_csi.6.7.6')} | intel5300 | sanitize | window size=8 hop=1 | features | infer | ndjson`]);
    expect(r.code).toBe(1);
    expect(ndjson(r.stdout)).toHaveLength(3);
    expect(r.stderr).toMatch(
      /CSI layout of intel5300: 3x2 antennas, 30 subcarriers spanning 20 MHz, band unknown; not trained on 3x2 antennas \(trained: 3x3, 2x2, 3x1, 1x1\)$/m,
    );
  });
});
