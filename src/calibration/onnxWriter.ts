/**
 * Writing ONNX models from TypeScript: a small graph builder (opset 17, IR version 8) and
 * `buildMlpPoseModel`, which turns the weights of a dense network into a model that satisfies the
 * model contract of `contract.ts`.
 *
 * The builder writes only what onnxruntime needs to load and run a graph: typed graph inputs and
 * outputs (the batch dimension is the symbol `N`), float32 and int64 initializers as little-endian
 * `raw_data`, nodes with attributes, and string metadata. It checks the graph as it is built (every
 * node input defined before use, every name defined once, every output produced), so a mistake is
 * an exception naming the tensor rather than an opaque load failure later.
 */
import onnxProto from 'onnx-proto';
import {
  CONTRACT_V2,
  CONTRACT_VERSION,
  INPUT_FEATURES,
  INPUT_HISTORY,
  INPUT_SITE,
  OUTPUT_ACTIVITY,
  OUTPUT_COUNT,
  OUTPUT_FALL,
  OUTPUT_KEYPOINTS3D,
  OUTPUT_BOXES,
  OUTPUT_DENSEPOSE,
  OUTPUT_FLOOR,
  OUTPUT_KEYPOINTS,
  OUTPUT_PRESENCE,
  type ModelMetadata,
} from '../model/contract.js';
import { N_DENSE_PARTS, N_KEYPOINTS } from '../pose/types.js';

const { onnx } = onnxProto;
type IModelProto = onnxProto.onnx.IModelProto;
type INodeProto = onnxProto.onnx.INodeProto;
type ITensorProto = onnxProto.onnx.ITensorProto;
type IValueInfoProto = onnxProto.onnx.IValueInfoProto;
type IAttributeProto = onnxProto.onnx.IAttributeProto;

/** ONNX operator set the writer targets (default domain). */
export const OPSET_VERSION = 17;
/** ONNX IR version written into every model (IR 8 is the one that goes with opset 17). */
export const IR_VERSION = 8;
/** `producer_name` of every model the writer produces. */
export const PRODUCER_NAME = 'csipose';
/** The symbolic batch dimension of graph inputs and outputs. */
export const BATCH_DIM = 'N';

/** TensorProto.DataType values used here. */
export const ElemType = { FLOAT: 1, INT64: 7, DOUBLE: 11 } as const;
export type ElemType = (typeof ElemType)[keyof typeof ElemType];

/** One dimension of a declared input or output: a size, or a symbol such as `N`. */
export type Dim = number | string;

/** A node attribute with its ONNX type made explicit (ONNX distinguishes `1` the int from `1.0`). */
export type AttributeValue =
  | { readonly kind: 'int'; readonly value: number }
  | { readonly kind: 'float'; readonly value: number }
  | { readonly kind: 'ints'; readonly value: readonly number[] }
  | { readonly kind: 'floats'; readonly value: readonly number[] }
  | { readonly kind: 'string'; readonly value: string };

/**
 * Constructors for typed attribute values.
 * @example builder.addNode('Concat', ['a', 'b'], ['c'], { axis: attr.int(1) })
 */
export const attr = {
  int: (value: number): AttributeValue => ({ kind: 'int', value }),
  float: (value: number): AttributeValue => ({ kind: 'float', value }),
  ints: (value: readonly number[]): AttributeValue => ({ kind: 'ints', value }),
  floats: (value: readonly number[]): AttributeValue => ({ kind: 'floats', value }),
  string: (value: string): AttributeValue => ({ kind: 'string', value }),
};

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** A little-endian byte copy of `data` (a copy, so later changes to the caller's array do not leak in). */
function rawBytes(data: Float32Array | BigInt64Array): Uint8Array {
  const out = new Uint8Array(data.byteLength);
  if (LITTLE_ENDIAN) {
    out.set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    return out;
  }
  const view = new DataView(out.buffer);
  if (data instanceof Float32Array) for (let i = 0; i < data.length; i++) view.setFloat32(i * 4, data[i], true);
  else for (let i = 0; i < data.length; i++) view.setBigInt64(i * 8, data[i], true);
  return out;
}

function attributeProto(name: string, v: AttributeValue): IAttributeProto {
  const T = onnx.AttributeProto.AttributeType;
  switch (v.kind) {
    case 'int':
      if (!Number.isSafeInteger(v.value)) throw new RangeError(`attribute ${name}: ${v.value} is not an integer`);
      return { name, type: T.INT, i: v.value };
    case 'float':
      return { name, type: T.FLOAT, f: v.value };
    case 'ints':
      for (const x of v.value) if (!Number.isSafeInteger(x)) throw new RangeError(`attribute ${name}: ${x} is not an integer`);
      return { name, type: T.INTS, ints: [...v.value] };
    case 'floats':
      return { name, type: T.FLOATS, floats: [...v.value] };
    case 'string':
      return { name, type: T.STRING, s: new TextEncoder().encode(v.value) };
  }
}

function checkDims(what: string, dims: readonly Dim[]): void {
  for (const d of dims) {
    if (typeof d === 'number' ? !(Number.isSafeInteger(d) && d >= 0) : d.length === 0)
      throw new RangeError(`${what}: bad dimension ${JSON.stringify(d)} in [${dims.join(', ')}]`);
  }
}

function valueInfo(name: string, dims: readonly Dim[], elemType: number): IValueInfoProto {
  return {
    name,
    type: {
      tensorType: {
        elemType,
        shape: { dim: dims.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) },
      },
    },
  };
}

/** Options of `Gemm`: Y = alpha * A' * B' + beta * C, A' = transpose(A) if transA, likewise B. */
export interface GemmOptions {
  alpha?: number;
  beta?: number;
  transA?: boolean;
  transB?: boolean;
  /** Name of the output tensor; generated when omitted. */
  output?: string;
}

/** Model-level fields written by `toBytes`. */
export interface ModelOptions {
  /** `producer_version`; default empty. */
  producerVersion?: string;
  /** `doc_string` of the model. */
  docString?: string;
}

/**
 * Builds one ONNX graph and writes it as a ModelProto (opset 17, IR 8, producer `csipose`).
 *
 * Names are checked as the graph grows: each tensor is defined once (graph input, initializer or
 * node output) and every node input must already be defined, which keeps the node list in the
 * topological order ONNX requires. The op helpers (`gemm`, `matMul`, `add`, ...) return the name of
 * the tensor they produce, generated unless `output` is given, so graphs compose like expressions.
 *
 * @example
 * const g = new OnnxGraphBuilder('affine');
 * g.addInput('x', ['N', 3]);
 * const w = g.addInitializer('w', new Float32Array([1, 0, 0, 1, 1, 1]), [3, 2]);
 * g.relu(g.matMul('x', w), 'y');
 * g.addOutput('y', ['N', 2]);
 * g.setMetadata('purpose', 'example');
 * const bytes = g.toBytes(); // load with InferenceSession.create(bytes)
 */
export class OnnxGraphBuilder {
  private readonly nodes: INodeProto[] = [];
  private readonly initializers: ITensorProto[] = [];
  private readonly inputs: IValueInfoProto[] = [];
  private readonly outputs: IValueInfoProto[] = [];
  private readonly metadata = new Map<string, string>();
  /** Every tensor name defined so far. */
  private readonly defined = new Set<string>();
  private readonly declaredOutputs = new Set<string>();
  private counter = 0;

  /**
   * @param graphName the graph's `name` field
   */
  constructor(readonly graphName = 'csipose') {}

  /** A tensor name not used yet, from `prefix`. */
  fresh(prefix: string): string {
    let name: string;
    do name = `${prefix}_${this.counter++}`;
    while (this.defined.has(name));
    return name;
  }

  private define(name: string, what: string): void {
    if (name.length === 0) throw new RangeError(`${what}: empty tensor name`);
    if (this.defined.has(name)) throw new RangeError(`${what}: tensor "${name}" is already defined`);
    this.defined.add(name);
  }

  /**
   * Declares a graph input.
   * @param name tensor name
   * @param dims sizes, or symbols such as `N` for the batch
   * @param elemType TensorProto data type, default float32
   * @returns `name`
   */
  addInput(name: string, dims: readonly Dim[], elemType: number = ElemType.FLOAT): string {
    checkDims(`input ${name}`, dims);
    this.define(name, 'input');
    this.inputs.push(valueInfo(name, dims, elemType));
    return name;
  }

  /**
   * Declares a graph output; some node (or input, or initializer) must define `name` by the time
   * the model is written.
   * @param name tensor name
   * @param dims sizes, or symbols such as `N`
   * @param elemType TensorProto data type, default float32
   * @returns `name`
   */
  addOutput(name: string, dims: readonly Dim[], elemType: number = ElemType.FLOAT): string {
    checkDims(`output ${name}`, dims);
    if (this.declaredOutputs.has(name)) throw new RangeError(`output: "${name}" is already declared`);
    this.declaredOutputs.add(name);
    this.outputs.push(valueInfo(name, dims, elemType));
    return name;
  }

  /**
   * Adds a float32 constant tensor (a weight). The data is copied.
   * @param name tensor name
   * @param data row-major values, `data.length` = product of `dims`
   * @param dims tensor shape
   * @returns `name`
   */
  addInitializer(name: string, data: Float32Array, dims: readonly number[]): string {
    checkDims(`initializer ${name}`, dims);
    const size = dims.reduce((a, b) => a * b, 1);
    if (data.length !== size) throw new RangeError(`initializer ${name}: ${data.length} values for shape [${dims.join(', ')}] (${size})`);
    this.define(name, 'initializer');
    this.initializers.push({ name, dims: [...dims], dataType: ElemType.FLOAT, rawData: rawBytes(data) });
    return name;
  }

  /**
   * Adds an int64 constant tensor (shapes for Reshape, indices for Slice).
   * @param name tensor name
   * @param values the integers
   * @param dims tensor shape; default one dimension of `values.length`
   * @returns `name`
   */
  addInt64Initializer(name: string, values: readonly number[], dims: readonly number[] = [values.length]): string {
    checkDims(`initializer ${name}`, dims);
    const size = dims.reduce((a, b) => a * b, 1);
    if (values.length !== size) throw new RangeError(`initializer ${name}: ${values.length} values for shape [${dims.join(', ')}] (${size})`);
    for (const v of values) if (!Number.isSafeInteger(v)) throw new RangeError(`initializer ${name}: ${v} is not an integer`);
    this.define(name, 'initializer');
    const data = BigInt64Array.from(values, (v) => BigInt(v));
    this.initializers.push({ name, dims: [...dims], dataType: ElemType.INT64, rawData: rawBytes(data) });
    return name;
  }

  /**
   * Adds a node of the default ONNX domain.
   * @param opType operator, e.g. `Gemm`
   * @param inputs input tensor names, each already defined (`''` skips an optional input)
   * @param outputs names of the tensors the node produces, not yet defined
   * @param attributes typed attributes (see `attr`)
   * @param name node name; generated when omitted
   */
  addNode(
    opType: string,
    inputs: readonly string[],
    outputs: readonly string[],
    attributes: Readonly<Record<string, AttributeValue>> = {},
    name?: string,
  ): void {
    for (const i of inputs) if (i !== '' && !this.defined.has(i)) throw new RangeError(`${opType} node: input "${i}" is not defined yet`);
    if (outputs.length === 0) throw new RangeError(`${opType} node: no outputs`);
    for (const o of outputs) this.define(o, `${opType} node`);
    this.nodes.push({
      opType,
      name: name ?? `${opType}_${this.nodes.length}`,
      input: [...inputs],
      output: [...outputs],
      attribute: Object.entries(attributes).map(([k, v]) => attributeProto(k, v)),
    });
  }

  private unary(opType: string, x: string, output?: string): string {
    const y = output ?? this.fresh(opType.toLowerCase());
    this.addNode(opType, [x], [y]);
    return y;
  }

  private binary(opType: string, a: string, b: string, output?: string): string {
    const y = output ?? this.fresh(opType.toLowerCase());
    this.addNode(opType, [a, b], [y]);
    return y;
  }

  /**
   * `Gemm`: Y = alpha * A' B' + beta * C (A 2-D, C broadcast to the result).
   * @returns the output name
   */
  gemm(a: string, b: string, c?: string, opts: GemmOptions = {}): string {
    const y = opts.output ?? this.fresh('gemm');
    const attributes: Record<string, AttributeValue> = {};
    if (opts.alpha !== undefined) attributes.alpha = attr.float(opts.alpha);
    if (opts.beta !== undefined) attributes.beta = attr.float(opts.beta);
    if (opts.transA) attributes.transA = attr.int(1);
    if (opts.transB) attributes.transB = attr.int(1);
    this.addNode('Gemm', c === undefined ? [a, b] : [a, b, c], [y], attributes);
    return y;
  }

  /** `MatMul` (numpy matmul semantics). @returns the output name */
  matMul(a: string, b: string, output?: string): string {
    return this.binary('MatMul', a, b, output);
  }

  /** Element-wise `Add` with broadcasting. @returns the output name */
  add(a: string, b: string, output?: string): string {
    return this.binary('Add', a, b, output);
  }

  /** Element-wise `Mul` with broadcasting. @returns the output name */
  mul(a: string, b: string, output?: string): string {
    return this.binary('Mul', a, b, output);
  }

  /** `Relu`. @returns the output name */
  relu(x: string, output?: string): string {
    return this.unary('Relu', x, output);
  }

  /** `Sigmoid`. @returns the output name */
  sigmoid(x: string, output?: string): string {
    return this.unary('Sigmoid', x, output);
  }

  /** `Tanh`. @returns the output name */
  tanh(x: string, output?: string): string {
    return this.unary('Tanh', x, output);
  }

  /** `Identity` (also how a graph input or an initializer is exposed under an output name). */
  identity(x: string, output?: string): string {
    return this.unary('Identity', x, output);
  }

  /**
   * `Reshape` to a constant shape (0 copies the input's dimension, -1 is inferred).
   * @param shape target shape; `[0, 4, 17, 3]` keeps the batch dimension
   * @returns the output name
   */
  reshape(x: string, shape: readonly number[], output?: string): string {
    const s = this.addInt64Initializer(this.fresh('shape'), shape);
    return this.binary('Reshape', x, s, output);
  }

  /** `Concat` along `axis`. @returns the output name */
  concat(inputs: readonly string[], axis: number, output?: string): string {
    const y = output ?? this.fresh('concat');
    this.addNode('Concat', inputs, [y], { axis: attr.int(axis) });
    return y;
  }

  /**
   * `Slice` with constant starts, ends, axes and steps (opset >= 10 takes them as inputs).
   * @returns the output name
   */
  slice(x: string, starts: readonly number[], ends: readonly number[], axes?: readonly number[], steps?: readonly number[], output?: string): string {
    const y = output ?? this.fresh('slice');
    const inputs = [x, this.addInt64Initializer(this.fresh('starts'), starts), this.addInt64Initializer(this.fresh('ends'), ends)];
    if (axes || steps) inputs.push(axes ? this.addInt64Initializer(this.fresh('axes'), axes) : '');
    if (steps) inputs.push(this.addInt64Initializer(this.fresh('steps'), steps));
    this.addNode('Slice', inputs, [y]);
    return y;
  }

  /**
   * Sets one `metadata_props` entry (values are strings in ONNX; numbers are written in decimal).
   * @param key metadata key
   * @param value its value
   */
  setMetadata(key: string, value: string | number): void {
    this.metadata.set(key, String(value));
  }

  /**
   * The ModelProto as a plain object (for inspection; `toBytes` encodes it).
   * @param opts producer version and doc string
   * @returns the model
   * @throws RangeError when a declared output is never defined, or the graph has no input/output
   */
  toModelProto(opts: ModelOptions = {}): IModelProto {
    if (this.outputs.length === 0) throw new RangeError('model has no outputs');
    for (const o of this.declaredOutputs) if (!this.defined.has(o)) throw new RangeError(`output "${o}" is declared but nothing produces it`);
    return {
      irVersion: IR_VERSION,
      opsetImport: [{ domain: '', version: OPSET_VERSION }],
      producerName: PRODUCER_NAME,
      producerVersion: opts.producerVersion ?? '',
      docString: opts.docString ?? '',
      graph: {
        name: this.graphName,
        node: this.nodes,
        initializer: this.initializers,
        input: this.inputs,
        output: this.outputs,
      },
      metadataProps: [...this.metadata].map(([key, value]) => ({ key, value })),
    };
  }

  /**
   * Encodes the model as ONNX protobuf bytes, ready for a `.onnx` file or `InferenceSession.create`.
   * @param opts producer version and doc string
   * @returns the serialized ModelProto
   */
  toBytes(opts: ModelOptions = {}): Uint8Array {
    return onnx.ModelProto.encode(onnx.ModelProto.create(this.toModelProto(opts))).finish();
  }
}

/**
 * One dense (fully connected) layer: y = x W + b.
 *
 * `w` is row-major with shape [in, out]: `w[i * out + j]` is the weight from input `i` to output
 * `j`, so y[j] = b[j] + sum over i of x[i] * w[i * out + j]. (A PyTorch `nn.Linear` stores the
 * transpose, [out, in]: export `linear.weight.T.contiguous()`.) `b` has `out` values.
 */
export interface DenseWeights {
  w: Float32Array;
  b: Float32Array;
  in: number;
  out: number;
}

/** The five heads of a contract model, named as its outputs. */
export type PoseHeadName = 'presence' | 'keypoints' | 'boxes' | 'floor' | 'densepose';

/**
 * The weights of an MLP pose model, the form the training side exports and `buildMlpPoseModel`
 * writes as ONNX. With F = feature_dim, P = max_persons and H = the last trunk width (F when the
 * trunk is empty):
 *
 * - `layers`: the trunk, applied in order, each followed by ReLU. `layers[0].in` = F and
 *   `layers[k].in` = `layers[k - 1].out`.
 * - `heads`: each reads the trunk output (`in` = H) and has `out` = P x (values per person):
 *   - `presence`  out P,           then Sigmoid; output [N, P]. Index p.
 *   - `keypoints` out P x 17 x 3,  then Sigmoid; output [N, P, 17, 3]. Index (p * 17 + k) * 3 + c
 *                 with c = 0 x / width, 1 y / height, 2 confidence; k in COCO-17 order.
 *   - `boxes`     out P x 4,       then Sigmoid; output [N, P, 4]. Index p * 4 + c with c = x, y,
 *                 width, height, each normalised to the view.
 *   - `floor`     out P x 2,       no activation (metres); output [N, P, 2]. Index p * 2 + c, c = x, y.
 *   - `densepose` out P x 24 x 3,  then Sigmoid; output [N, P, 24, 3]. Index (p * 24 + part) * 3 + c
 *                 with c = 0 confidence, 1 u, 2 v; part in DensePose order (part_id - 1).
 *
 * So the heads hold pre-activation values (logits) where a Sigmoid follows. Every layer's `w` and
 * `b` follow `DenseWeights` (row-major [in][out], y = x W + b).
 */
export interface MlpPoseWeights {
  layers: DenseWeights[];
  heads: Record<PoseHeadName, DenseWeights>;
  /**
   * Width of the optional `site` input (contract SITE_DIM). When set, the graph takes `site`
   * [N, siteDim] beside `features` and the trunk reads the two side by side (features first), so
   * `layers[0].in` = F + siteDim.
   */
  siteDim?: number;
}

interface HeadSpec {
  name: PoseHeadName;
  /** Per-person trailing shape of the output. */
  trailing: readonly number[];
  sigmoid: boolean;
}

/** Contract heads in output order: per-person shape and activation. */
export const POSE_HEADS: readonly HeadSpec[] = [
  { name: OUTPUT_PRESENCE, trailing: [], sigmoid: true },
  { name: OUTPUT_KEYPOINTS, trailing: [N_KEYPOINTS, 3], sigmoid: true },
  { name: OUTPUT_BOXES, trailing: [4], sigmoid: true },
  { name: OUTPUT_FLOOR, trailing: [2], sigmoid: false },
  { name: OUTPUT_DENSEPOSE, trailing: [N_DENSE_PARTS, 3], sigmoid: true },
];

function checkDense(what: string, d: DenseWeights, expectIn: number, expectOut?: number): void {
  if (!Number.isInteger(d.in) || d.in < 1 || !Number.isInteger(d.out) || d.out < 1)
    throw new RangeError(`${what}: in and out must be positive integers, got ${d.in} and ${d.out}`);
  if (d.in !== expectIn) throw new RangeError(`${what}: in is ${d.in}, expected ${expectIn} (the width before it)`);
  if (expectOut !== undefined && d.out !== expectOut) throw new RangeError(`${what}: out is ${d.out}, expected ${expectOut}`);
  if (d.w.length !== d.in * d.out) throw new RangeError(`${what}: w has ${d.w.length} values, expected in x out = ${d.in * d.out}`);
  if (d.b.length !== d.out) throw new RangeError(`${what}: b has ${d.b.length} values, expected out = ${d.out}`);
  for (let i = 0; i < d.w.length; i++) if (!Number.isFinite(d.w[i])) throw new RangeError(`${what}: w[${i}] is ${d.w[i]}`);
  for (let i = 0; i < d.b.length; i++) if (!Number.isFinite(d.b[i])) throw new RangeError(`${what}: b[${i}] is ${d.b[i]}`);
}

/**
 * Writes a contract pose model (see `contract.ts`) from the weights of an MLP: input `features`
 * [N, feature_dim] (and `site` [N, site_dim], concatenated after it, when `weights.siteDim` is
 * set), a trunk of Gemm + ReLU layers, then one Gemm per head with the activation and reshape that
 * `MlpPoseWeights` documents. All six contract metadata keys are written from `meta` (its
 * `csipose_contract` as given, normally CONTRACT_VERSION), `site_dim` with the site input, and
 * `trained_layouts` when `meta` has it.
 *
 * @param weights trunk and head weights, row-major [in][out] (y = x W + b)
 * @param meta model metadata; `feature_dim` and `max_persons` must agree with the weights
 * @returns the ONNX model bytes
 * @throws RangeError when the weights do not fit together or contain non-finite values
 * @example
 * const bytes = buildMlpPoseModel(weights, { csipose_contract: CONTRACT_VERSION, model_version: '2026.1',
 *   feature_dim: 1080, max_persons: 4, window_frames: 64, trained_on: 'sim-v3' });
 * await writeFile('models/csipose-pose.onnx', bytes);
 */
export function buildMlpPoseModel(weights: MlpPoseWeights, meta: ModelMetadata): Uint8Array {
  const F = meta.feature_dim;
  const P = meta.max_persons;
  if (!Number.isInteger(F) || F < 1) throw new RangeError(`feature_dim must be a positive integer, got ${F}`);
  if (!Number.isInteger(P) || P < 1) throw new RangeError(`max_persons must be a positive integer, got ${P}`);

  const S = weights.siteDim ?? 0;
  if (!Number.isInteger(S) || S < 0) throw new RangeError(`siteDim must be a positive integer when set, got ${S}`);
  if (meta.site_dim !== undefined && meta.site_dim !== S) throw new RangeError(`metadata site_dim ${meta.site_dim} does not match the weights' siteDim ${S}`);

  const g = new OnnxGraphBuilder('csipose_mlp_pose');
  g.addInput(INPUT_FEATURES, [BATCH_DIM, F]);
  let x = INPUT_FEATURES;
  let width = F;
  if (S > 0) {
    g.addInput(INPUT_SITE, [BATCH_DIM, S]);
    x = g.concat([INPUT_FEATURES, INPUT_SITE], 1, 'trunk.input');
    width = F + S;
  }
  weights.layers.forEach((layer, i) => {
    checkDense(`trunk layer ${i}`, layer, width);
    const w = g.addInitializer(`trunk${i}.w`, layer.w, [layer.in, layer.out]);
    const b = g.addInitializer(`trunk${i}.b`, layer.b, [layer.out]);
    x = g.relu(g.gemm(x, w, b, { output: `trunk${i}.linear` }), `trunk${i}.relu`);
    width = layer.out;
  });

  for (const head of POSE_HEADS) {
    const d = weights.heads[head.name];
    if (!d) throw new RangeError(`head ${head.name} is missing`);
    const perPerson = head.trailing.reduce((a, b) => a * b, 1);
    checkDense(`head ${head.name}`, d, width, P * perPerson);
    const w = g.addInitializer(`${head.name}.w`, d.w, [d.in, d.out]);
    const b = g.addInitializer(`${head.name}.b`, d.b, [d.out]);
    const reshaped = head.trailing.length > 0;
    let y = g.gemm(x, w, b, { output: head.sigmoid || reshaped ? `${head.name}.linear` : head.name });
    if (head.sigmoid) y = g.sigmoid(y, reshaped ? `${head.name}.sigmoid` : head.name);
    // Shape 0 copies the batch dimension, so a batch of zero rows reshapes too.
    if (reshaped) g.reshape(y, [0, P, ...head.trailing], head.name);
    g.addOutput(head.name, [BATCH_DIM, P, ...head.trailing]);
  }

  g.setMetadata('csipose_contract', meta.csipose_contract);
  g.setMetadata('model_version', meta.model_version);
  g.setMetadata('feature_dim', F);
  g.setMetadata('max_persons', P);
  g.setMetadata('window_frames', meta.window_frames);
  g.setMetadata('trained_on', meta.trained_on);
  if (S > 0) g.setMetadata('site_dim', S);
  if (meta.trained_layouts) g.setMetadata('trained_layouts', meta.trained_layouts);
  return g.toBytes({ docString: `csipose MLP pose model (${CONTRACT_VERSION} layout)` });
}

/** The heads of a v2 model (contract `csipose-pose-v2`), as raw dense layers on the trunk output. */
export type PoseHeadNameV2 = 'count' | 'presence' | 'root' | 'offsets' | 'activity' | 'fall';

/**
 * The weights of a v2 MLP pose model. The trunk reads `features`, `history` (flattened) and `site`
 * side by side, in that order (`layers[0].in` = F + history_steps x history_dim + site_dim), each
 * layer followed by ReLU. With P = max_persons and A = the activity classes:
 * - `count`    out P + 1, then Softmax:  output `count` [N, P + 1];
 * - `presence` out P, then Sigmoid:      output `presence` [N, P];
 * - `root`     out P x 3 (the pelvis, metres, x and y relative to the receiver, z above the floor)
 *   and `offsets` out P x 17 x 3 (each joint minus the pelvis, metres): output `keypoints3d`
 *   [N, P, 17, 3] = offsets + root;
 * - `activity` out P x A, then Softmax over A: output `activity` [N, P, A];
 * - `fall`     out 1, then Sigmoid:      output `fall` [N, 1].
 */
export interface PoseWeightsV2 {
  layers: DenseWeights[];
  heads: Record<PoseHeadNameV2, DenseWeights>;
}

/** Shapes of a v2 model's inputs. */
export interface V2Shape {
  featureDim: number;
  historySteps: number;
  historyDim: number;
  siteDim: number;
  maxPersons: number;
  activities: number;
}

/**
 * Writes a v2 contract pose model (see `contract.ts` CONTRACT_V2) from the weights of an MLP.
 * Metadata: `csipose_contract` (as given in `meta`), `model_version`, `feature_dim`, `max_persons`,
 * `window_frames`, `trained_on`, `site_dim`, `history_steps`, `history_dim`,
 * `history_stride_frames`, `fall_window_s`, and `trained_layouts` when `meta` has it.
 *
 * @param weights trunk and head weights, row-major [in][out] (y = x W + b)
 * @param shape input sizes and slots; must agree with the weights and `meta`
 * @param meta model metadata
 * @returns the ONNX model bytes
 * @throws RangeError when the weights do not fit together or contain non-finite values
 */
export function buildPoseModelV2(weights: PoseWeightsV2, shape: V2Shape, meta: ModelMetadata): Uint8Array {
  const { featureDim: F, historySteps: K, historyDim: S, siteDim: G, maxPersons: P, activities: A } = shape;
  for (const [k, v] of Object.entries(shape))
    if (!Number.isInteger(v) || v < (k === 'siteDim' ? 0 : 1)) throw new RangeError(`${k} must be a positive integer, got ${v}`);
  if (meta.feature_dim !== F || meta.max_persons !== P) throw new RangeError('metadata feature_dim / max_persons do not match the shape');
  const g = new OnnxGraphBuilder('csipose_pose_v2');
  g.addInput(INPUT_FEATURES, [BATCH_DIM, F]);
  g.addInput(INPUT_HISTORY, [BATCH_DIM, K, S]);
  const parts = [INPUT_FEATURES, g.reshape(INPUT_HISTORY, [0, K * S], 'history.flat')];
  if (G > 0) {
    g.addInput(INPUT_SITE, [BATCH_DIM, G]);
    parts.push(INPUT_SITE);
  }
  let x = g.concat(parts, 1, 'trunk.input');
  let width = F + K * S + G;
  weights.layers.forEach((layer, i) => {
    checkDense(`trunk layer ${i}`, layer, width);
    const w = g.addInitializer(`trunk${i}.w`, layer.w, [layer.in, layer.out]);
    const b = g.addInitializer(`trunk${i}.b`, layer.b, [layer.out]);
    x = g.relu(g.gemm(x, w, b, { output: `trunk${i}.linear` }), `trunk${i}.relu`);
    width = layer.out;
  });
  const head = (name: PoseHeadNameV2, out: number): string => {
    const d = weights.heads[name];
    if (!d) throw new RangeError(`head ${name} is missing`);
    checkDense(`head ${name}`, d, width, out);
    return g.gemm(x, g.addInitializer(`${name}.w`, d.w, [d.in, d.out]), g.addInitializer(`${name}.b`, d.b, [d.out]), { output: `${name}.linear` });
  };
  g.addNode('Softmax', [head('count', P + 1)], [OUTPUT_COUNT], { axis: attr.int(1) });
  g.sigmoid(head('presence', P), OUTPUT_PRESENCE);
  const root = g.reshape(head('root', P * 3), [0, P, 1, 3], 'root.shaped');
  const offsets = g.reshape(head('offsets', P * N_KEYPOINTS * 3), [0, P, N_KEYPOINTS, 3], 'offsets.shaped');
  g.add(offsets, root, OUTPUT_KEYPOINTS3D);
  g.addNode('Softmax', [g.reshape(head('activity', P * A), [0, P, A], 'activity.shaped')], [OUTPUT_ACTIVITY], { axis: attr.int(2) });
  g.sigmoid(head('fall', 1), OUTPUT_FALL);
  g.addOutput(OUTPUT_COUNT, [BATCH_DIM, P + 1]);
  g.addOutput(OUTPUT_PRESENCE, [BATCH_DIM, P]);
  g.addOutput(OUTPUT_KEYPOINTS3D, [BATCH_DIM, P, N_KEYPOINTS, 3]);
  g.addOutput(OUTPUT_ACTIVITY, [BATCH_DIM, P, A]);
  g.addOutput(OUTPUT_FALL, [BATCH_DIM, 1]);
  const props: Array<[string, string | number | undefined]> = [
    ['csipose_contract', meta.csipose_contract],
    ['model_version', meta.model_version],
    ['feature_dim', F],
    ['max_persons', P],
    ['window_frames', meta.window_frames],
    ['trained_on', meta.trained_on],
    ['site_dim', G > 0 ? G : undefined],
    ['history_steps', K],
    ['history_dim', S],
    ['history_stride_frames', meta.history_stride_frames],
    ['fall_window_s', meta.fall_window_s],
    ['trained_layouts', meta.trained_layouts],
  ];
  for (const [k, v] of props) if (v !== undefined) g.setMetadata(k, v);
  return g.toBytes({ docString: `csipose MLP pose model (${CONTRACT_V2} layout)` });
}

/**
 * Reads the weights of a v2 model that `buildPoseModelV2` wrote (its initializers by name), so that
 * `csipose calibrate` can fine-tune a shipped model.
 * @param bytes the ONNX file
 * @returns the weights
 * @throws RangeError when the file is not such a model
 */
export function readPoseWeightsV2(bytes: Uint8Array): PoseWeightsV2 {
  const model = onnx.ModelProto.decode(bytes);
  const init = new Map<string, { dims: number[]; data: Float32Array }>();
  for (const t of model.graph?.initializer ?? []) {
    if (t.dataType !== ElemType.FLOAT || !t.name) continue;
    const raw = t.rawData ?? new Uint8Array(0);
    const copy = new Uint8Array(raw.length);
    copy.set(raw);
    const data = t.floatData && t.floatData.length > 0 ? Float32Array.from(t.floatData) : new Float32Array(copy.buffer);
    init.set(t.name, { dims: (t.dims ?? []).map(Number), data });
  }
  const dense = (name: string): DenseWeights => {
    const w = init.get(`${name}.w`);
    const b = init.get(`${name}.b`);
    if (!w || !b || w.dims.length !== 2) throw new RangeError(`not a csipose v2 MLP model: no weights ${name}.w / ${name}.b`);
    return { in: w.dims[0]!, out: w.dims[1]!, w: w.data, b: b.data };
  };
  const layers: DenseWeights[] = [];
  for (let i = 0; init.has(`trunk${i}.w`); i++) layers.push(dense(`trunk${i}`));
  const names: PoseHeadNameV2[] = ['count', 'presence', 'root', 'offsets', 'activity', 'fall'];
  return { layers, heads: Object.fromEntries(names.map((n) => [n, dense(n)])) as Record<PoseHeadNameV2, DenseWeights> };
}
