import { type ElemType, type NDArray, type TypedArray, elementCount, strides } from "../array.ts";
import { HELPERS } from "../elem/helpers.ts";
import type { Op } from "@xlaserve/stablehlo";
import { isTensorType } from "@xlaserve/stablehlo";
import { BINARY_OPS, UNARY_OPS } from "../kernels/elementwise-ops.ts";
import { type Arena, dataTaker } from "./arena.ts";
import { type Layout, type Node, chooseLayout, generate, rowPitch } from "./fused-codegen.ts";
import { type SimdLoop, generateSimd } from "./fused-simd.ts";
import { MATH } from "./fused-simd-math.ts";
import { elementCost, sharesFor } from "./fused-simd-split.ts";
import { engineThreads } from "../parallel/threads.ts";
import type { Frame, Kernel, Step } from "./program.ts";
import type { RtValue } from "./values.ts";

/**
 * Fusion of elementwise chains. A tree of elementwise ops whose intermediate values have a
 * single use becomes one generated loop over the output; broadcast_in_dim feeding the tree is
 * read through strides (stride 0 on broadcast axes) instead of being materialised. Every op in
 * the tree still rounds / wraps its result to its own element type, so fused and unfused runs
 * give the same bits. Trees whose types the generator does not cover (complex, TOTALORDER...)
 * run their original kernels one by one.
 */

/** A static slice as a fusion leaf (the caller pushes its operand as leaf `leaf`); null for other ops. */
function sliceNode(op: Op, leaf: number): Node | null {
  if (op.name !== "stablehlo.slice" || op.operands.length !== 1) return null;
  const t = op.operandTypes?.[0];
  const r = op.resultTypes[0];
  const start = op.attrs.start_indices;
  if (!isTensorType(t) || !isTensorType(r) || !Array.isArray(start)) return null;
  const step = Array.isArray(op.attrs.strides) ? op.attrs.strides.map(Number) : start.map(() => 1);
  return { kind: "slice", start: start.map(Number), step, operandShape: [...t.shape], resultShape: [...r.shape], leaf };
}

function broadcastDims(op: Op): number[] {
  return (op.attrs.broadcast_dimensions as number[]).map(Number);
}

const fusibleByName = new Map<string, boolean>();

/** Whether ops of this name are elementwise ops the generator fuses (worked out once per name). */
function isFusibleName(name: string): boolean {
  let fusible = fusibleByName.get(name);
  if (fusible === undefined) {
    const n = name.replace(/^(stablehlo|chlo)\./, "");
    fusible =
      n !== name && (BINARY_OPS.has(n) || UNARY_OPS.has(n) || ["compare", "select", "clamp", "convert"].includes(n));
    fusibleByName.set(name, fusible);
  }
  return fusible;
}

export function isFusible(op: Op): boolean {
  if (!isFusibleName(op.name)) return false;
  return op.results.length === 1 && isTensorType(op.resultTypes[op.resultTypes.length - 1]);
}

/**
 * Rewrites a block's steps: fusible trees become single steps. `useCount` counts every use of
 * a slot in the block (step inputs, region captures, block results).
 */
/** Per slot, the index of the step that makes it (-1: none; a block argument or an outer value). */
function producers(steps: Step[]): Int32Array {
  let top = -1;
  for (const s of steps) for (const o of s.outputs) if (o > top) top = o;
  const out = new Int32Array(top + 1).fill(-1);
  for (let i = 0; i < steps.length; i++) for (const o of (steps[i] as Step).outputs) out[o] = i;
  return out;
}

export function fuseSteps(
  steps: Step[],
  uses: number[][],
  useCount: { get(slot: number): number | undefined },
): { steps: Step[]; uses: number[][] } {
  const producer = producers(steps);
  // Per step index: 1 once absorbed into a tree, and the fused step that replaces a tree's root.
  const absorbed = new Uint8Array(steps.length);
  const replaced: ({ step: Step; uses: number[] } | undefined)[] = new Array(steps.length);
  // Per step index, 1 + the index of the root of the tree it joined.
  const memberOf = new Int32Array(steps.length);
  for (let i = steps.length - 1; i >= 0; i--) {
    const root = steps[i] as Step;
    if (absorbed[i] || !isFusible(root.op)) continue;
    const leaves: number[] = [];
    const members: Step[] = [];
    const memberIndices: number[] = [];
    let size = 0;
    const build = (step: Step, index: number): Node => {
      members.push(step);
      memberIndices.push(index);
      size++;
      const children = step.inputs.map((slot): Node => {
        const p = producer[slot] ?? -1;
        const ps = p < 0 ? undefined : steps[p];
        if (ps && !absorbed[p] && useCount.get(slot) === 1) {
          if (isFusible(ps.op)) {
            absorbed[p] = 1;
            return build(ps, p);
          }
          const slice = sliceNode(ps.op, leaves.length);
          if (slice) {
            // Read through the slice's offset and strides instead of copying it out first (the
            // gates of an LSTM cell are slices of one matmul's output).
            absorbed[p] = 1;
            members.push(ps);
            memberIndices.push(p);
            size++;
            leaves.push(ps.inputs[0] as number);
            return slice;
          }
          if (ps.op.name === "stablehlo.broadcast_in_dim") {
            absorbed[p] = 1;
            members.push(ps);
            memberIndices.push(p);
            size++;
            let source = ps.inputs[0] as number;
            let dims = broadcastDims(ps.op);
            // A broadcast of a broadcast (JAX writes [C] -> [1,1,1,C] -> [N,H,W,C]) reads the
            // first one's operand directly, so the small middle array is not made at run time.
            const q = producer[source] ?? -1;
            const qs = q < 0 ? undefined : steps[q];
            if (qs && !absorbed[q] && useCount.get(source) === 1) {
              if (qs.op.name === "stablehlo.broadcast_in_dim") {
                absorbed[q] = 1;
                members.push(qs);
                memberIndices.push(q);
                size++;
                const outer = dims;
                dims = broadcastDims(qs.op).map((a) => outer[a] as number);
                source = qs.inputs[0] as number;
              }
            }
            leaves.push(source);
            return { kind: "broadcast", dims, leaf: leaves.length - 1 };
          }
        }
        leaves.push(slot);
        return { kind: "leaf", index: leaves.length - 1 };
      });
      return { kind: "op", op: step.op, children };
    };
    const tree = build(root, i);
    if (size < 2) continue;
    members.reverse(); // producers first, for the fallback path
    const kernel = fusedKernel(tree, root.op, members, leaves);
    // The fused step reads its leaves and whatever its members read that no member makes. Trees
    // are small: arrays searched linearly beat sets here.
    for (const k of memberIndices) memberOf[k] = i + 1;
    const fusedUses: number[] = [];
    for (const l of leaves) if (!fusedUses.includes(l)) fusedUses.push(l);
    for (let j = memberIndices.length - 1; j >= 0; j--)
      for (const u of uses[memberIndices[j] as number] ?? []) {
        const made = u < producer.length && memberOf[producer[u] as number] === i + 1;
        if (!made && !fusedUses.includes(u)) fusedUses.push(u);
      }
    replaced[i] = {
      step: { op: root.op, label: "fused elementwise", inputs: leaves, outputs: root.outputs, kernel, frees: [] },
      uses: fusedUses,
    };
  }
  const outSteps: Step[] = [];
  const outUses: number[][] = [];
  steps.forEach((s, i) => {
    if (absorbed[i]) return;
    const r = replaced[i];
    outSteps.push(r ? r.step : s);
    outUses.push(r ? r.uses : (uses[i] as number[]));
  });
  return { steps: outSteps, uses: outUses };
}

type Generated = NonNullable<ReturnType<typeof generate>>;

/** Below this many elements copying in and out of WebAssembly costs more than the loop saves. */
const SIMD_MIN_ELEMENTS = 64;

/**
 * Whether the SIMD loop pays for its copies in and out: where the tree evaluates tanh, exp or
 * logistic (XLA's algorithms, several times cheaper four lanes at a time), works on f16 / bf16
 * (which the JavaScript loop decodes and encodes one element at a time), or is large enough to
 * be split over the engine's threads (fused-simd-split.ts), or rounds and converts to integers
 * (ROUNDINGS). For f32 arithmetic alone (an LSTM's bias add, a sum of two products) on one thread
 * the JavaScript loop was 2 to 4 times faster at 64 to 1M elements, the copies costing more than
 * the loop itself. Same bits either way.
 */
function simdPays(tree: Node, leaves: readonly NDArray[], count: number): boolean {
  for (const l of leaves) if (l.type === "bf16" || l.type === "f16") return true;
  if (sharesFor(count, elementCost(tree, false), engineThreads()) > 1) return true;
  const visit = (n: Node): boolean => {
    if (n.kind !== "op") return false;
    const name = n.op.name.replace(/^(stablehlo|chlo)\./, "");
    if (MATH[name] !== undefined || ROUNDINGS.has(name)) return true;
    const t = n.op.resultTypes[n.op.resultTypes.length - 1];
    if (isTensorType(t) && (t.elem === "bf16" || t.elem === "f16")) return true;
    // A quantizing layer's last step, a float tree converted to an integer (saturating in SIMD,
    // compares and a truncation per element in the loop).
    if (isTensorType(t) && name === "convert" && (t.elem === "i8" || t.elem === "i16" || t.elem === "i32")) return true;
    return n.children.some(visit);
  };
  return visit(tree);
}

/**
 * Roundings to an integer: the JavaScript loop's round half to even is an add, a subtract and a
 * zero-sign fix-up with branches on the data; with a quantizing layer's clip and convert to i8
 * it ran at about 60 ns an element against well under 10 in SIMD (int8_mlp b32's requantize).
 */
const ROUNDINGS: ReadonlySet<string> = new Set(["round_nearest_even", "floor", "ceil"]);

/** How many leaf shape sets a fused kernel keeps prepared besides the last. */
const RECENT_SHAPES = 12;

/** What one call's leaf types and shapes imply; reused while they stay the same. */
interface Prepared {
  readonly types: ElemType[];
  readonly shapes: (readonly number[])[];
  /** The storage of each leaf whose value was written into the code as a literal. */
  readonly baked: (TypedArray | null)[];
  readonly outShape: number[];
  readonly count: number;
  readonly strides: number[][];
  /** Per leaf, where its first element read is (non-zero for slices). */
  readonly offsets: number[];
  /** Per leaf, its step from one outer index to the next (layout class "g"). */
  readonly pitches: number[];
  readonly layout: Layout | null;
  readonly compiled: Generated | null;
  /** The same loop in WebAssembly SIMD, where the tree's types and ops allow (fused-simd.ts). */
  readonly simd: SimdLoop | null;
  /** Output storage of the compiled loop's type. */
  readonly take: ((arena: Arena, count: number) => TypedArray) | null;
}

function fusedKernel(tree: Node, root: Op, members: Step[], leafSlots: number[]): Kernel {
  const rootType = root.resultTypes[root.resultTypes.length - 1];
  const staticShape = isTensorType(rootType) ? rootType.shape : [];
  const staticCount = elementCount(staticShape);
  const directLeaves = collectDirectLeaves(tree);
  const cache = new Map<string, Generated | null>();
  const simdCache = new Map<string, SimdLoop | null>();
  let last: Prepared | null = null;
  // The few most recent others: a reducer's region runs on halving row counts, one shape per
  // level, and preparing again at every level cost more than the level's arithmetic.
  const recent: Prepared[] = [];
  const prepare = (leaves: NDArray[], frame: Frame): Prepared => {
    // Regions evaluated over whole arrays (kernels/region.ts) run ops typed as scalars on
    // arrays: the values, not the printed type, give the shape then.
    let outShape = staticShape;
    for (const k of directLeaves) {
      const l = leaves[k] as NDArray;
      if (elementCount(l.shape) > staticCount) outShape = l.shape;
    }
    const { strides: stridesPerLeaf, offsets, fits } = leafStrides(tree, leaves, outShape);
    const layout = chooseLayout(stridesPerLeaf, outShape, offsets);
    const dense = strides(outShape);
    const pitches = stridesPerLeaf.map((st, k) =>
      layout && layout.classes[k] === "g" ? (rowPitch(st, outShape, dense, layout.split, layout.inner) ?? 0) : 0,
    );
    // Constants of plain float types holding one value (one element, or a folded broadcast of
    // one, like ReLU's zeros) become literals in the generated code.
    const baked = leaves.map((l, k) =>
      frame.constant[leafSlots[k] as number] && (l.type === "f32" || l.type === "f64") && isSplat(l.data)
        ? l.data
        : null,
    );
    const literals = baked.map((d) => (d ? (d[0] as number) : null));
    const key = `${leaves.map((l) => `${l.type}:${l.shape.length}`).join(",")}|${outShape.length}|${layout?.classes.join("") ?? "strided"}|${literals.map((x) => (x === null ? "" : Object.is(x, -0) ? "-0" : String(x))).join(",")}`;
    let compiled = fits ? cache.get(key) : null;
    if (compiled === undefined) {
      compiled = generate(tree, leaves, outShape, layout, literals);
      cache.set(key, compiled);
    }
    const count = elementCount(outShape);
    let simd = simdCache.get(key);
    if (simd === undefined) {
      simd =
        compiled && count >= SIMD_MIN_ELEMENTS && simdPays(tree, leaves, count)
          ? (generateSimd(tree, leaves, layout, literals)?.loop ?? null)
          : null;
      simdCache.set(key, simd);
    }
    return {
      types: leaves.map((l) => l.type),
      shapes: leaves.map((l) => [...l.shape]),
      baked,
      outShape: [...outShape],
      count,
      strides: stridesPerLeaf,
      offsets,
      pitches,
      layout,
      compiled,
      simd: count >= SIMD_MIN_ELEMENTS ? simd : null,
      take: compiled ? dataTaker(compiled.outType) : null,
    };
  };
  return (args, frame) => {
    const leaves = args as NDArray[];
    let p = last;
    if (p === null || !matches(p, leaves)) {
      p = recent.find((r) => matches(r, leaves)) ?? null;
      if (p === null) {
        p = prepare(leaves, frame);
        recent.push(p);
        if (recent.length > RECENT_SHAPES) recent.shift();
      }
      last = p;
    }
    const compiled = p.compiled;
    if (compiled === null || p.take === null) return fallback(members, leafSlots, leaves, frame);
    const out = p.take(frame.ctx.arena, p.count);
    const layout = p.layout;
    if (p.simd !== null && layout !== null && p.simd(leaves, out, layout.outer, layout.inner, p.offsets, p.pitches))
      return [{ type: compiled.outType, shape: [...p.outShape], data: out }];
    compiled.loop(
      leaves,
      out,
      layout ? layout.outer : p.count,
      layout ? layout.inner : 1,
      p.outShape,
      p.strides,
      HELPERS,
      p.offsets,
      p.pitches,
    );
    return [{ type: compiled.outType, shape: [...p.outShape], data: out }];
  };
}

/** Every element the same value (signed zeros told apart), at least one element. */
function isSplat(data: TypedArray): boolean {
  if (data.length === 0) return false;
  const first = data[0];
  for (let i = 1; i < data.length; i++) if (!Object.is(data[i], first)) return false;
  return true;
}

/** Whether this call's leaves have the types, shapes and baked constants `p` was made for. */
function matches(p: Prepared, leaves: NDArray[]): boolean {
  if (leaves.length !== p.types.length) return false;
  for (let k = 0; k < leaves.length; k++) {
    const l = leaves[k] as NDArray;
    const baked = p.baked[k];
    if (l.type !== p.types[k] || (baked !== null && l.data !== baked)) return false;
    const a = l.shape;
    const b = p.shapes[k] as readonly number[];
    if (a === b) continue;
    if (a.length !== b.length) return false;
    for (let d = 0; d < a.length; d++) if (a[d] !== b[d]) return false;
  }
  return true;
}

function collectDirectLeaves(tree: Node): number[] {
  const out: number[] = [];
  const visit = (n: Node) => {
    if (n.kind === "leaf") out.push(n.index);
    else if (n.kind === "op") n.children.forEach(visit);
  };
  visit(tree);
  return out;
}

/** Runs the member steps' own kernels in order (types the generator does not cover). */
function fallback(members: Step[], leafSlots: number[], leaves: NDArray[], frame: Frame): RtValue[] {
  const values = new Map<number, RtValue>();
  leafSlots.forEach((s, i) => {
    values.set(s, leaves[i] as NDArray);
  });
  let last: RtValue[] = [];
  for (const m of members) {
    last = m.kernel(
      m.inputs.map((s) => (values.get(s) ?? frame.env[s]) as RtValue),
      frame,
    );
    m.outputs.forEach((o, i) => {
      values.set(o, last[i] as RtValue);
    });
  }
  return last;
}

/**
 * Per leaf, its element stride along each output axis (0 where it is broadcast) and the index
 * of its first element read; `fits` is false when a sliced leaf is not of the shape the module
 * gave its slice (a region evaluated over whole arrays), which then runs unfused.
 */
function leafStrides(
  tree: Node,
  leaves: NDArray[],
  outShape: number[],
): { strides: number[][]; offsets: number[]; fits: boolean } {
  const offsets = leaves.map(() => 0);
  let fits = true;
  const out: number[][] = leaves.map((l) => {
    if (elementCount(l.shape) === 1) return outShape.map(() => 0);
    return strides(outShape);
  });
  const visit = (n: Node) => {
    if (n.kind === "slice") {
      const leaf = leaves[n.leaf] as NDArray;
      if (!sameDims(leaf.shape, n.operandShape) || !sameDims(outShape, n.resultShape)) {
        fits = false;
        return;
      }
      const inStrides = strides(leaf.shape);
      out[n.leaf] = n.step.map((k, a) => ((outShape[a] as number) === 1 ? 0 : k * (inStrides[a] as number)));
      offsets[n.leaf] = n.start.reduce((sum, s, a) => sum + s * (inStrides[a] as number), 0);
      return;
    }
    if (n.kind === "broadcast") {
      const leaf = leaves[n.leaf] as NDArray;
      const dims = n.dims;
      const inStrides = strides(leaf.shape);
      const st = outShape.map(() => 0);
      dims.forEach((d, i) => {
        st[d] = (leaf.shape[i] as number) === 1 ? 0 : (inStrides[i] as number);
      });
      out[n.leaf] = st;
    } else if (n.kind === "op") n.children.forEach(visit);
  };
  visit(tree);
  return { strides: out, offsets, fits };
}

function sameDims(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}
