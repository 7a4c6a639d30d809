/**
 * Fused elementwise trees on f32 / bf16 / f16 as WebAssembly SIMD (fused-simd-module.ts), four
 * lanes of f32 at a time: the same bits as the JavaScript loop fused-codegen.ts generates,
 * several times faster (that loop decodes each narrow element through a table, rounds every op
 * in f64 and encodes on the bits one element at a time; here a narrow load is a widening load
 * and a shift, rounding is four integer ops on a whole vector).
 *
 * Why the bits are the same: each op computes in f32 and then rounds to its own type, as the
 * loop does from f64. For add, subtract, multiply, divide and sqrt, f32 (24 bits) is at least
 * 2p + 2 bits for p = 11 (f16) and 8 (bf16), so rounding the f32 result to the narrow type
 * equals rounding the exact result (the loop's f64 result likewise); f32 ops equal Math.fround
 * of f64 ones for the same reason. max / min follow Math.max / Math.min (NaN wins, -0 < +0).
 * Conversions between the three types are roundings. NaNs are stored canonical (0x7fc00000,
 * 0x7fc0, 0x7e00), as the loop's encoders store them.
 *
 * tanh, exp and logistic are computed inside the module (fused-simd-math.ts: XLA CPU's own
 * algorithms, the same steps as the loop's scalar helpers). Other unary functions WebAssembly
 * has no instruction for (log, rsqrt...) split the tree into stages: a module computes the
 * function's operand into scratch memory (as f32, which holds every value of the three types
 * exactly), a JavaScript pass applies the function there with the loop's own expression and
 * rounding, and the next module reads the result as a leaf. An operand that varies only per row (layer norm's variance) is computed once per row.
 *
 * Only the `outer x inner` layouts (fused-codegen.ts's LeafClass, but for slices' rows) are
 * taken; compare, select, integers, f64 and strided leaves keep the loop. Every module works in
 * one memory; inputs are copied in and the result out (one memcpy each), as the SIMD GEMM does.
 * The memory is a shared one, so a module whose work is worth it runs on several threads, each
 * on a range of rows (fused-simd-split.ts, parallel/wasm-pool.ts); the copies and the functions
 * applied between modules stay on the calling thread.
 */
import type { ElemType, NDArray, TypedArray } from "../array.ts";
import { F16_TO_NUMBER } from "@xlaserve/stablehlo/float16.ts";
import { HELPERS } from "../elem/helpers.ts";
import { SPECIAL_FUNCTIONS, UNARY_OPS } from "../kernels/elementwise-ops.ts";
import { hasFloatUnary, roundExpr, unaryExpr } from "../kernels/expr.ts";
import type { Layout, LeafClass, Node } from "./fused-codegen.ts";
import { MATH } from "./fused-simd-math.ts";
import {
  BINARY,
  INT_RESULTS,
  type Lane,
  type Narrow,
  type Plan,
  SIZE,
  type Stored,
  UNARY,
  moduleBytes,
} from "./fused-simd-module.ts";
import { type SplitLayout, elementCost, sharesFor, splitCall } from "./fused-simd-split.ts";
import { engineThreads } from "../parallel/threads.ts";
import { WasmPool } from "../parallel/wasm-pool.ts";

/**
 * Runs the tree into `out`; false (nothing written) where its operands would not fit the memory
 * cap. `offsets` and `pitches` place the rows of slice leaves ("g"), as for the loop.
 */
export type SimdLoop = (
  leaves: readonly NDArray[],
  out: TypedArray,
  outer: number,
  inner: number,
  offsets: readonly number[],
  pitches: readonly number[],
) => boolean;

/**
 * The most bytes of operands and result one call copies into the module's memory, which never
 * shrinks: larger trees keep the loop, so a big convnet's activations are not held twice.
 */
const MAX_BYTES = 32 * 1024 * 1024;
/** The memory's pages at most: the cap, and a page of slack. */
const MAX_PAGES = MAX_BYTES / 65536 + 1;
/** The most threads one call is split over (a control block slot each). */
const MAX_THREADS = 256;

/**
 * The memory every fused module works in (one call at a time on a thread), and views of it
 * made once per size: a view made per call on a WebAssembly memory's buffer cost about 2 us in
 * JavaScriptCore, a tenth of a transformer's whole run.
 */
let memory: WebAssembly.Memory | null | undefined;
/** Pages of the shared memory modules import, or null where only a plain memory could be made. */
let sharedPages: number | null = null;
let i8 = new Int8Array(0);
let u16 = new Uint16Array(0);
let i16 = new Int16Array(0);
let u32 = new Uint32Array(0);
let i32 = new Int32Array(0);
let f32 = new Float32Array(0);

function viewMemory(mem: WebAssembly.Memory): void {
  i8 = new Int8Array(mem.buffer);
  u16 = new Uint16Array(mem.buffer);
  i16 = new Int16Array(mem.buffer);
  u32 = new Uint32Array(mem.buffer);
  i32 = new Int32Array(mem.buffer);
  f32 = new Float32Array(mem.buffer);
}
let disabled = false;
let runs = 0;

function sharedMemory(): WebAssembly.Memory | null {
  if (memory === undefined) {
    try {
      memory = new WebAssembly.Memory({ initial: 16, maximum: MAX_PAGES, shared: true });
      sharedPages = MAX_PAGES;
    } catch {
      try {
        memory = new WebAssembly.Memory({ initial: 16 });
      } catch {
        memory = null;
      }
    }
    if (memory) viewMemory(memory);
  }
  return memory;
}

function reserve(mem: WebAssembly.Memory, bytes: number): void {
  const have = f32.length * 4;
  if (bytes > have) {
    mem.grow(Math.ceil((bytes - have) / 65536));
    viewMemory(mem);
  }
}

type Run = (...args: number[]) => void;

/** A compiled module, its instance on this thread, and its id in the pool once posted there. */
interface Compiled {
  readonly module: WebAssembly.Module;
  readonly run: Run;
  poolId: number;
}
const MODULES = new Map<string, Compiled | null>();

function instantiate(bytes: Uint8Array<ArrayBuffer>, mem: WebAssembly.Memory): Compiled | null {
  const key = Array.from(bytes, (x) => String.fromCharCode(x)).join("");
  let compiled = MODULES.get(key);
  if (compiled === undefined) {
    try {
      const module = new WebAssembly.Module(bytes);
      const instance = new WebAssembly.Instance(module, { e: { m: mem } });
      compiled = { module, run: instance.exports.run as Run, poolId: -1 };
    } catch {
      compiled = null;
    }
    MODULES.set(key, compiled);
  }
  return compiled;
}

/** This thread's pool over the shared memory, made on the first call worth splitting. */
let pool: WasmPool | null = null;
/** Each share's arguments, reused from call to call. */
const shareArgs: number[][] = [];
let threadedRuns = 0;
let governed = true;

/**
 * Runs `c` on `args`, split over the engine's threads where `cost` units per element make the
 * call worth it (fused-simd-split.ts); one thread otherwise, or if the pool failed (the whole
 * call is then computed here, over whatever a share wrote).
 */
function call(c: Compiled, args: number[], layout: SplitLayout, cost: number): void {
  const threads = Math.min(engineThreads(), MAX_THREADS);
  const wanted = sharesFor((args[0] as number) * (args[1] as number), cost, threads);
  if (wanted > 1 && sharedPages !== null && memory) {
    if (pool === null) {
      pool = new WasmPool(memory, MAX_THREADS);
      pool.governor.enabled = governed;
    }
    while (shareArgs.length < wanted) shareArgs.push([]);
    const n = pool.usable ? splitCall(args, layout, wanted, shareArgs) : 1;
    if (n > 1) {
      if (c.poolId < 0) c.poolId = pool.register(c.module);
      if (pool.run(c.poolId, c.run, shareArgs, n)) {
        threadedRuns++;
        return;
      }
    }
  }
  c.run(...args);
}

const opName = (n: Node & { kind: "op" }) => n.op.name.replace(/^(stablehlo|chlo)\./, "");

/** The loop's expression for unary op `n` on `x` of type t (as fused-codegen.ts's opExpr writes it), or null. */
function scriptUnary(n: string, t: Narrow): string | null {
  if (!UNARY_OPS.has(n) || n === "is_finite") return null;
  const special = SPECIAL_FUNCTIONS[n];
  if (special) return `${special}(x)`;
  if (n === "sinh" || n === "cosh") return `H.${n}F32(x)`;
  return hasFloatUnary(n) ? unaryExpr(n, t, "x") : null;
}

const isFloat = (t: string | null | undefined): t is Narrow => t === "f32" || t === "bf16" || t === "f16";

/**
 * The tree's value type where every op is in the subset and every type one of the three floats,
 * with two integer ends: an i32 leaf converted to f32 (a quantized GEMM's accumulator; the
 * rounding is the one Math.fround does), and a float tree converted to i8 / i16 / i32 as the
 * root (`root`); null otherwise.
 */
function check(
  tree: Node,
  leaves: readonly NDArray[],
  literals: readonly (number | null)[],
  root = true,
): Stored | null {
  if (tree.kind !== "op") {
    const k = tree.kind === "leaf" ? tree.index : tree.leaf;
    const leaf = leaves[k] as NDArray;
    const t = leaf.type;
    if (t === "i32") return leaf.data instanceof Int32Array && (literals[k] ?? null) === null ? "i32" : null;
    if (t !== "f32" && t !== "bf16" && t !== "f16") return null;
    return literals[k] !== null && literals[k] !== undefined && t !== "f32" ? null : t;
  }
  const kids = tree.children.map((c) => check(c, leaves, literals, false));
  if (kids.some((k) => k === null)) return null;
  const n = opName(tree);
  const first = kids[0];
  if (first === undefined || first === null) return null;
  if (n === "convert") {
    const r = tree.op.resultTypes[tree.op.resultTypes.length - 1];
    const to = r && "elem" in r ? (r.elem as ElemType) : null;
    if (kids.length !== 1 || to === null) return null;
    // i32 -> f32 only: to bf16 / f16 through f32 would round twice.
    if (first === "i32") return to === "f32" ? "f32" : null;
    if (isFloat(to)) return to;
    return root && INT_RESULTS.has(to) ? (to as Stored) : null;
  }
  if (!isFloat(first)) return null;
  if (BINARY[n] && kids.length === 2 && kids[1] === first) return first;
  if (kids.length === 1 && (UNARY[n] || MATH[n] || scriptUnary(n, first) !== null)) return first;
  return null;
}

/** A function applied in JavaScript between two modules. */
interface Stage {
  /** The function's operand, its opaque descendants replaced by the leaves of earlier stages. */
  readonly tree: Node;
  readonly type: Narrow;
  /** Its operand varies only with the outer index: computed once per row, read as a "c" leaf. */
  readonly perRow: boolean;
  /** Applies the function to values[from..to). */
  readonly pass: (values: Float32Array, from: number, to: number, h: typeof HELPERS) => void;
}

const PASSES = new Map<string, Stage["pass"]>();

function passFor(n: string, t: Narrow): Stage["pass"] {
  const source = `for (let i = from; i < to; i++) { const x = S[i]; S[i] = ${roundExpr(t, scriptUnary(n, t) as string)}; }`;
  let pass = PASSES.get(source);
  if (!pass) {
    pass = new Function("S", "from", "to", "H", source) as Stage["pass"];
    PASSES.set(source, pass);
  }
  return pass;
}

/** Replaces every unary op outside the instruction set by a leaf numbered after the real ones. */
function splitStages(tree: Node, count: number, classes: LeafClass[], types: Lane[]): { root: Node; stages: Stage[] } {
  const stages: Stage[] = [];
  const level = (n: Node): number => {
    if (n.kind !== "op") {
      const c = classes[n.kind === "leaf" ? n.index : n.leaf];
      return c === "s" ? 0 : c === "c" ? 1 : 2;
    }
    return Math.max(0, ...n.children.map(level));
  };
  // A staged function's operand is a float (check takes unary ops on floats only).
  const typeOf = (n: Node): Narrow => {
    if (n.kind !== "op") return types[n.kind === "leaf" ? n.index : n.leaf] as Narrow;
    if (opName(n) === "convert") {
      const r = n.op.resultTypes[n.op.resultTypes.length - 1];
      return (r && "elem" in r ? r.elem : "f32") as Narrow;
    }
    return typeOf(n.children[0] as Node);
  };
  const rewrite = (n: Node): Node => {
    if (n.kind !== "op") return n;
    const children = n.children.map(rewrite);
    const name = opName(n);
    if (children.length !== 1 || UNARY[name] || MATH[name] || name === "convert") return { ...n, children };
    const operand = children[0] as Node;
    const type = typeOf(operand);
    const perRow = level(operand) <= 1;
    stages.push({ tree: operand, type, perRow, pass: passFor(name, type) });
    const index = count + stages.length - 1;
    classes[index] = perRow ? "c" : "d";
    types[index] = type;
    return { kind: "leaf", index };
  };
  return { root: rewrite(tree), stages };
}

/** f16's values as f32 bits, by f16 bits. */
const F16_AS_F32_BITS = new Uint32Array(F16_TO_NUMBER.buffer, F16_TO_NUMBER.byteOffset, F16_TO_NUMBER.length);

/** The first n f16 / bf16 elements of `data` as f32 at byte `at` of the memory. */
function widenInto(data: Uint16Array, n: number, type: Narrow, at: number): void {
  const bits = u32;
  const o = at >> 2;
  if (type === "bf16") for (let i = 0; i < n; i++) bits[o + i] = (data[i] as number) << 16;
  else for (let i = 0; i < n; i++) bits[o + i] = F16_AS_F32_BITS[data[i] as number] as number;
}

/** `outer` rows of `inner` elements, row i at off + i * pitch of `data`, to byte `at` of the memory. */
function copyRows(
  data: Float32Array | Int32Array | Uint16Array,
  off: number,
  pitch: number,
  outer: number,
  inner: number,
  at: number,
) {
  const view = data instanceof Float32Array ? f32 : data instanceof Int32Array ? i32 : u16;
  const o = data instanceof Uint16Array ? at >> 1 : at >> 2;
  for (let i = 0; i < outer; i++) {
    const from = off + i * pitch;
    view.set(data.subarray(from, from + inner), o + i * inner);
  }
}

/** The leaves `tree` reads. */
function leavesRead(tree: Node, into = new Set<number>()): Set<number> {
  if (tree.kind === "op") for (const c of tree.children) leavesRead(c, into);
  else into.add(tree.kind === "leaf" ? tree.index : tree.leaf);
  return into;
}

/** Bytes of a leaf's run in memory: "d" the output's count, "r" a row, "c" a column, "s" one. */
function leafElements(c: LeafClass, outer: number, inner: number): number {
  return c === "d" ? outer * inner : c === "r" ? inner : c === "c" ? outer : 1;
}

/**
 * The SIMD loop for `tree`, or null where it does not apply (no SIMD here, no `outer x inner`
 * layout, a type or op outside the subset).
 */
export function generateSimd(
  tree: Node,
  leaves: readonly NDArray[],
  layout: Layout | null,
  literals: readonly (number | null)[],
): { loop: SimdLoop; outType: ElemType } | null {
  if (disabled || layout === null) return null;
  const outType = check(tree, leaves, literals);
  if (outType === null || tree.kind !== "op") return null;
  const mem = sharedMemory();
  if (mem === null) return null;
  const count = leaves.length;
  // Rows of a slice ("g": an offset and a row pitch of their own, an LSTM's gates cut from one
  // GEMM result) are copied in row by row, so the module reads them like the output.
  const sliced = layout.classes.map((c) => c === "g");
  const classes = layout.classes.map((c): LeafClass => (c === "g" ? "d" : c));
  const valueTypes = leaves.map((l) => l.type as Lane);
  const { root, stages } = splitStages(tree, count, classes, valueTypes);
  const total = count + stages.length;
  // Stage results, and rows read again for every outer index (per-channel parameters), are
  // kept as f32: a row is widened once per call instead of once per vector.
  const loadTypes = valueTypes.map((t, k): Lane => (k < count && (classes[k] !== "r" || t === "i32") ? t : "f32"));
  const allLiterals = [...literals, ...stages.map(() => null)];
  // A per-row stage runs as one row of `outer` elements: its column leaves become that row.
  const rowClasses = classes.map((c): LeafClass => (c === "c" ? "r" : c));
  const plan = (outType: Stored, cls: LeafClass[]): Plan => ({ loadTypes, valueTypes, outType, classes: cls });
  const stageRuns: (Compiled | null)[] = stages.map((s) =>
    instantiate(moduleBytes(s.tree, plan("f32", s.perRow ? rowClasses : classes), allLiterals, sharedPages), mem),
  );
  const final = instantiate(moduleBytes(root, plan(outType, classes), allLiterals, sharedPages), mem);
  if (final === null || stageRuns.some((r) => r === null)) return null;
  const sizes = loadTypes.map((t) => SIZE[t]);
  const outSize = SIZE[outType];
  // How the final module and the dense stages split over threads: the leaves each reads (not
  // literals), each module's own output (a stage's scratch is f32).
  const splitLayout = (t: Node, size: number): SplitLayout => {
    const read = leavesRead(t);
    const splitClasses = classes.map((c, k) => (read.has(k) && (allLiterals[k] ?? null) === null ? c : null));
    return { classes: splitClasses, sizes, outSize: size };
  };
  const finalLayout = splitLayout(root, outSize);
  const stageLayouts = stages.map((s) => splitLayout(s.tree, 4));
  const finalCost = elementCost(root, outType !== "f32");
  const stageCosts = stages.map((s) => elementCost(s.tree, s.type !== "f32"));
  const args: number[] = new Array(3 + total).fill(0);
  /** An earlier leaf holding the same array, read the same way, or -1. */
  const twinOf = (ls: readonly NDArray[], k: number): number => {
    const d = (ls[k] as NDArray).data;
    for (let j = 0; j < k; j++)
      if (
        (ls[j] as NDArray).data === d &&
        !sliced[j] &&
        (literals[j] ?? null) === null &&
        classes[j] === classes[k] &&
        loadTypes[j] === loadTypes[k]
      )
        return j;
    return -1;
  };
  const loop: SimdLoop = (ls, out, outer, inner, offsets, pitches) => {
    if (outer * inner === 0) return true;
    // Each run 16-byte aligned with a vector of slack after it.
    let at = 0;
    for (let k = 0; k < total; k++) {
      if (allLiterals[k] !== null && allLiterals[k] !== undefined) continue;
      args[2 + k] = at;
      at += Math.ceil((leafElements(classes[k] as LeafClass, outer, inner) * (sizes[k] as number) + 16) / 16) * 16;
    }
    const outAt = at;
    const outBytes = outer * inner * outSize;
    if (outAt + outBytes + 16 > MAX_BYTES) return false;
    reserve(mem, outAt + outBytes + 16);
    for (let k = 0; k < count; k++) {
      if (literals[k] !== null && literals[k] !== undefined) continue;
      const d = (ls[k] as NDArray).data as Float32Array | Int32Array | Uint16Array;
      // One array read as several leaves (x in GELU's x + 0.044715 x^3, times x) is copied once.
      const twin = sliced[k] ? -1 : twinOf(ls, k);
      if (twin >= 0) {
        args[2 + k] = args[2 + twin] as number;
        continue;
      }
      const n = leafElements(classes[k] as LeafClass, outer, inner);
      if (sliced[k]) copyRows(d, offsets[k] as number, pitches[k] as number, outer, inner, args[2 + k] as number);
      else if (d instanceof Uint16Array && loadTypes[k] === "f32")
        widenInto(d, n, valueTypes[k] as Narrow, args[2 + k] as number);
      else {
        // Runs start 16-byte aligned, so an element index in the view of the leaf's own size.
        const run = n === d.length ? d : d.subarray(0, n);
        if (run instanceof Float32Array) f32.set(run, (args[2 + k] as number) >> 2);
        else if (run instanceof Int32Array) i32.set(run, (args[2 + k] as number) >> 2);
        else u16.set(run, (args[2 + k] as number) >> 1);
      }
    }
    for (let s = 0; s < stages.length; s++) {
      const stage = stages[s] as Stage;
      const scratch = args[2 + count + s] as number;
      args[0] = stage.perRow ? 1 : outer;
      args[1] = stage.perRow ? outer : inner;
      args[2 + total] = scratch;
      const compiled = stageRuns[s] as Compiled;
      // A per-row stage is one row of `outer` values: too little to split.
      if (stage.perRow) compiled.run(...args);
      else call(compiled, args, stageLayouts[s] as SplitLayout, stageCosts[s] as number);
      const n = stage.perRow ? outer : outer * inner;
      stage.pass(f32, scratch >> 2, (scratch >> 2) + n, HELPERS);
    }
    args[0] = outer;
    args[1] = inner;
    args[2 + total] = outAt;
    call(final, args, finalLayout, finalCost);
    runs++;
    const from = outAt / outSize;
    const to = (outAt + outBytes) / outSize;
    if (out instanceof Float32Array) out.set(f32.subarray(from, to));
    else if (out instanceof Int8Array) out.set(i8.subarray(from, to));
    else if (out instanceof Int16Array) out.set(i16.subarray(from, to));
    else if (out instanceof Int32Array) out.set(i32.subarray(from, to));
    else (out as Uint16Array).set(u16.subarray(from, to));
    return true;
  };
  return { loop, outType };
}

/** Turns the SIMD loops off (true) or back on, for tests that compare them with the loop. */
export function setFusedSimdDisabled(off: boolean): void {
  disabled = off;
}

/** How many fused loops have run in WebAssembly on this thread (tests check the path is taken). */
export function fusedSimdRuns(): number {
  return runs;
}

/** How many module calls were split over the pool's threads (tests check the path is taken). */
export function fusedSimdThreadedRuns(): number {
  return threadedRuns;
}

/** Threads this thread's pool has started (none until a call is worth splitting). */
export function fusedSimdPoolThreads(): number {
  return pool?.started ?? 0;
}

/**
 * Whether splitting pauses while split calls come out slower than one thread would have been
 * (parallel/split-governor.ts); tests that check the threaded path is taken turn it off.
 */
export function setFusedSimdGoverned(on: boolean): void {
  governed = on;
  if (pool) pool.governor.enabled = on;
}

/** Stops this thread's pool threads; a later large call starts new ones. */
export function closeFusedSimdPool(): void {
  pool?.close();
  pool = null;
  for (const c of MODULES.values()) if (c) c.poolId = -1;
}
