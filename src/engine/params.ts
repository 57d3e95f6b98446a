import type { ParamSpec, ParamValues } from './spec.js';

/** A parameter that could not be accepted; `param` names it. */
export class ParamError extends Error {
  constructor(
    readonly param: string,
    message: string,
  ) {
    super(message);
    this.name = 'ParamError';
  }
}

/**
 * Converts one raw value to its declared type and checks its bounds.
 * @param spec the parameter's declaration
 * @param raw the value as written (`"64"`, `"true"`) or already typed
 * @returns the typed value
 * @throws ParamError naming the parameter and the rule it breaks
 */
export function coerceParam(spec: ParamSpec, raw: unknown): number | string | boolean {
  const where = `parameter "${spec.name}"`;
  switch (spec.type) {
    case 'int':
    case 'number': {
      const v = typeof raw === 'number' ? raw : typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : NaN;
      if (!Number.isFinite(v)) throw new ParamError(spec.name, `${where} must be a number, got ${JSON.stringify(raw)}`);
      if (spec.type === 'int' && !Number.isInteger(v)) throw new ParamError(spec.name, `${where} must be an integer, got ${JSON.stringify(raw)}`);
      if (spec.min !== undefined && v < spec.min) throw new ParamError(spec.name, `${where} must be >= ${spec.min}, got ${v}`);
      if (spec.max !== undefined && v > spec.max) throw new ParamError(spec.name, `${where} must be <= ${spec.max}, got ${v}`);
      return v;
    }
    case 'boolean': {
      if (typeof raw === 'boolean') return raw;
      if (raw === 'true' || raw === '1' || raw === 'yes') return true;
      if (raw === 'false' || raw === '0' || raw === 'no') return false;
      throw new ParamError(spec.name, `${where} must be true or false, got ${JSON.stringify(raw)}`);
    }
    case 'enum': {
      const s = String(raw);
      if (!spec.values?.includes(s)) throw new ParamError(spec.name, `${where} must be one of ${spec.values?.join(', ')}, got ${JSON.stringify(raw)}`);
      return s;
    }
    case 'string':
      return String(raw);
  }
}

/**
 * Validates raw parameters against their declarations and fills in defaults.
 * @param specs the operator's parameters
 * @param raw given values by name
 * @returns every declared parameter with a typed value
 * @throws ParamError for unknown names and invalid values
 */
export function resolveParams(specs: readonly ParamSpec[], raw: Record<string, unknown>): ParamValues {
  const out: ParamValues = {};
  for (const name of Object.keys(raw)) {
    if (!specs.some((s) => s.name === name)) {
      const known = specs.map((s) => s.name).join(', ') || 'none';
      throw new ParamError(name, `unknown parameter "${name}" (parameters: ${known})`);
    }
  }
  for (const s of specs) out[s.name] = name(raw, s.name) ? coerceParam(s, raw[s.name]) : s.default;
  return out;
}

function name(raw: Record<string, unknown>, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(raw, key) && raw[key] !== undefined;
}
