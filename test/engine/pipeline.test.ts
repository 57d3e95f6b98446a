import { describe, expect, it } from 'vitest';
import { firstValueFrom, from, toArray } from 'rxjs';
import { registry } from '../../pipelines/index.js';
import { buildPipeline } from '../../src/cli/build.js';
import { PipelineError, pipelineOperator, resolveStages, splitStages } from '../../src/engine/pipeline.js';
import { makeFrame } from '../helpers/frames.js';
import type { DopplerSpectrum } from '../../src/csi/frame.js';

function errorOf(fn: () => unknown): PipelineError {
  try {
    fn();
  } catch (e) {
    if (e instanceof PipelineError) return e;
    throw e;
  }
  throw new Error('expected a PipelineError');
}

describe('splitStages', () => {
  it('splits on | and keeps columns and key=value params', () => {
    const s = splitStages('file:cap.dat | intel5300 |sanitize| window size=64 hop=8 | ndjson');
    expect(s.map((x) => x.name)).toEqual(['file:cap.dat', 'intel5300', 'sanitize', 'window', 'ndjson']);
    expect(s[3]!.params).toEqual({ size: '64', hop: '8' });
    expect(s[1]!.column).toBe(15);
    expect(s[2]!.column).toBe(26);
  });

  it('rejects an empty stage and a bare word where key=value belongs', () => {
    expect(errorOf(() => splitStages('sim || ndjson')).stage).toBe(2);
    const e = errorOf(() => splitStages('sim | window size=64 hop | ndjson'));
    expect(e.stage).toBe(2);
    expect(e.message).toContain('expected key=value, got "hop"');
    expect(e.column).toBe('sim | window size=64 '.length);
  });
});

describe('buildPipeline', () => {
  it('builds the example of the README and resolves sense into its operators', () => {
    const b = buildPipeline('file:cap.dat | intel5300 | sense | ndjson', registry);
    expect(b.sourceKind).toBe('bytes');
    expect(b.stages.map((s) => s.spec.name)).toEqual(['intel5300', 'sanitize', 'window', 'doppler']);
    expect(b.stages[2]!.params.size).toBe(64);
    expect(b.output).toBe('spectrum');
    expect(b.sink?.spec.name).toBe('ndjson');
  });

  it('points at an unknown operator with a suggestion and a caret under it', () => {
    const input = 'file:cap.dat | intel5300 | sanitize | dopler | ndjson';
    const e = errorOf(() => buildPipeline(input, registry));
    expect(e.stage).toBe(4);
    expect(e.reason).toBe('unknown operator "dopler" (did you mean "doppler"?)');
    const lines = e.message.split('\n');
    expect(lines[1]).toBe(`  ${input}`);
    expect(lines[2]).toBe(`  ${' '.repeat(input.indexOf('dopler'))}^^^^^^`);
  });

  it('rejects a stage whose input kind does not match, naming both kinds', () => {
    const e = errorOf(() => buildPipeline('file:cap.dat | intel5300 | doppler | ndjson', registry));
    expect(e.stage).toBe(3);
    expect(e.reason).toContain('"doppler" takes window but the previous stage gives frame');
    const e2 = errorOf(() => buildPipeline('sim | intel5300 | ndjson', registry));
    expect(e2.stage).toBe(2);
    expect(e2.reason).toContain('takes bytes');
  });

  it('rejects bad parameter values and unknown parameters at their stage', () => {
    expect(errorOf(() => buildPipeline('sim | window size=abc | ndjson', registry)).reason).toContain('"size" must be a number');
    expect(errorOf(() => buildPipeline('sim | window size=1 | ndjson', registry)).reason).toContain('must be >= 2');
    expect(errorOf(() => buildPipeline('sim | window size=64.5 | ndjson', registry)).reason).toContain('integer');
    expect(errorOf(() => buildPipeline('sim | window sise=64 | ndjson', registry)).reason).toContain('unknown parameter "sise"');
    expect(errorOf(() => buildPipeline('sim | sanitize method=magic | ndjson', registry)).reason).toContain('must be one of');
    expect(errorOf(() => buildPipeline('sim | sense size=3 | ndjson', registry)).reason).toContain('stage.param');
  });

  it('rejects unknown sources and sink parameters, and requires a sink when asked', () => {
    expect(errorOf(() => buildPipeline('tcp://x | ndjson', registry)).stage).toBe(1);
    expect(errorOf(() => buildPipeline('udp://0.0.0.0:5500 | ndjson', registry)).reason).toContain('format=');
    expect(errorOf(() => buildPipeline('sim | stats interval=0 ', registry)).reason).toContain('>= 0.1');
    expect(errorOf(() => buildPipeline('sim | sanitize', registry, { requireSink: true })).reason).toContain('ends with a sink');
  });

  it('applies stage.param overrides to a named pipeline', () => {
    const b = buildPipeline('sim | sense window.size=128 window.hop=16 | null', registry);
    const w = b.stages.find((s) => s.spec.name === 'window')!;
    expect(w.params.size).toBe(128);
    expect(w.params.hop).toBe(16);
  });
});

describe('pipelineOperator', () => {
  it('runs sense end to end on frames and yields one spectrum per hop once the window is full', async () => {
    const frames = Array.from({ length: 64 + 8 * 3 }, (_, i) =>
      makeFrame({ nRx: 3, nTx: 3, nSub: 30, seq: i, value: (sc, rx, tx) => [Math.cos(0.3 * i + sc * 0.1), Math.sin(0.3 * i + rx + tx)] }),
    );
    const def = registry.pipelines.get('sense')!;
    const out = (await firstValueFrom(from(frames).pipe(pipelineOperator(def, registry), toArray<unknown>()))) as DopplerSpectrum[];
    expect(out).toHaveLength(4);
    expect(out[0]!.nStreams).toBe(9 * 3);
    expect(out[0]!.nBins).toBe(64);
    expect(out.map((s) => s.windowIndex)).toEqual([0, 1, 2, 3]);
  });

  it('type-checks a pipeline used from code the same way', () => {
    expect(() => resolveStages([{ name: 'sense', params: {}, text: 'sense', column: 0 }], 'bytes', registry)).toThrow(PipelineError);
  });
});
