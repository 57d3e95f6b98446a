import type { Registry } from '../engine/pipeline.js';
import { SINKS } from './sinks/index.js';
import type { ParamSpec } from '../engine/spec.js';

function paramLine(p: ParamSpec): string {
  const range = p.type === 'enum' ? ` one of ${p.values?.join('|')}` : p.min !== undefined || p.max !== undefined ? ` [${p.min ?? ''}..${p.max ?? ''}]` : '';
  return `    ${p.name}=${String(p.default)}  (${p.type}${range}) ${p.description}\n`;
}

/** The text (or JSON) of `csipose operators`: every operator and sink with parameters and defaults. */
export function describeOperators(registry: Registry, json: boolean): string {
  if (json) {
    return (
      JSON.stringify(
        {
          operators: [...registry.operators.values()].map((o) => ({
            name: o.name,
            summary: o.summary,
            input: o.input,
            output: o.output,
            params: o.params,
          })),
          sinks: [...SINKS.values()].map((s) => ({ name: s.name, summary: s.summary, params: s.params })),
        },
        null,
        2,
      ) + '\n'
    );
  }
  let s = 'Operators (use as "name key=value ..." stages):\n';
  for (const o of registry.operators.values()) {
    s += `  ${o.name}  ${o.input} -> ${o.output}  ${o.summary}\n`;
    for (const p of o.params) s += paramLine(p);
  }
  s += '\nSinks (the last stage):\n';
  for (const k of SINKS.values()) {
    s += `  ${k.name}  ${k.summary}\n`;
    for (const p of k.params) s += paramLine(p);
  }
  return s;
}

/** The text (or JSON) of `csipose pipelines`. */
export function describePipelines(registry: Registry, json: boolean): string {
  const list = [...registry.pipelines.values()];
  if (json) return JSON.stringify(list, null, 2) + '\n';
  let s = '';
  for (const p of list) {
    const stages = p.stages.map(([n, params]) => [n, ...Object.entries(params ?? {}).map(([k, v]) => `${k}=${String(v)}`)].join(' ')).join(' | ');
    s += `${p.name}  ${p.summary}\n    ${stages}\n`;
  }
  return s;
}
