import { type ElemType, type NDArray, type TypedArray, isComplexType, isFloatType, strides } from "../array.ts";
import type { HELPERS } from "../elem/helpers.ts";
import type { Op } from "@xlaserve/stablehlo";
import { isTensorType } from "@xlaserve/stablehlo";
import { BINARY_OPS, SPECIAL_FUNCTIONS, UNARY_OPS } from "../kernels/elementwise-ops.ts";
import {
  binaryExpr,
  compareExpr,
  convertExpr,
  domainOf,
  hasFloatUnary,
  loadExpr,
  roundExpr,
  storeStmt,
  unaryExpr,
} from "../kernels/expr.ts";

/**
 * Code generation for fused elementwise trees (fusion.ts builds the trees). The output is
 * walked as `outer x inner` elements when every leaf is indexed by a simple function of that
 * split (see LeafClass): a per-channel parameter on an NHWC tensor is then read as `P[j]` and a
 * per-row statistic (layer norm's mean) as `P[i]`, with no per-element index arithmetic, and
 * sub-expressions that do not depend on `j` are hoisted out of the inner loop. Other broadcast
 * patterns use an odometer over strides.
 */

export type Node =
  | { kind: "leaf"; index: number }
  | { kind: "op"; op: Op; children: Node[] }
  /** A leaf read through broadcast_in_dim: `dims[i]` is the output axis of the leaf's axis i. */
  | { kind: "broadcast"; dims: number[]; leaf: number }
  /**
   * A leaf read through a static slice of `operandShape` (its type in the module): output element
   * x reads the leaf at start + x * step on each axis.
   */
  | { kind: "slice"; start: number[]; step: number[]; operandShape: number[]; resultShape: number[]; leaf: number };

/**
 * How a leaf is indexed in the `outer x inner` walk: "d" like the output (w), "s" one element
 * (0), "r" a row repeated for every outer index (j), "c" one element per outer index (i), "g"
 * contiguous rows at a leaf's own offset and row pitch (a slice: off + i * pitch + j).
 */
export type LeafClass = "d" | "s" | "r" | "c" | "g";

export interface Layout {
  readonly outer: number;
  readonly inner: number;
  /** Output axes before this one make up the outer index. */
  readonly split: number;
  readonly classes: LeafClass[];
}

export type Loop = (
  leaves: NDArray[],
  out: TypedArray,
  outer: number,
  inner: number,
  shape: number[],
  st: number[][],
  h: typeof HELPERS,
  offsets: number[],
  pitches: number[],
) => void;

/**
 * Generated loops by source text, shared by every step (and plan) that needs the same one:
 * a model repeats the same few chains per layer, and one shared function reaches the
 * optimising JIT tiers after a few runs instead of each copy warming up on its own.
 */
const LOOPS = new Map<string, Loop>();
const LOOP_PARAMS = ["leaves", "out", "outer", "inner", "shape", "st", "H", "off", "pitch"] as const;

/**
 * The first split of the output axes at which every leaf has a class; null when none does. A leaf
 * with a non-zero offset (a slice) can only be "g".
 */
export function chooseLayout(stridesPerLeaf: number[][], shape: number[], offsets: number[]): Layout | null {
  const rank = shape.length;
  const dense = strides(shape);
  const total = shape.reduce((a, b) => a * b, 1);
  for (let k = 0; k <= rank; k++) {
    let inner = 1;
    for (let a = k; a < rank; a++) inner *= shape[a] as number;
    const classes: LeafClass[] = [];
    for (let l = 0; l < stridesPerLeaf.length; l++) {
      const st = stridesPerLeaf[l] as number[];
      const c = offsets[l] === 0 ? classify(st, shape, dense, k, inner) : null;
      const g = c === null && rowPitch(st, shape, dense, k, inner) !== null ? "g" : c;
      if (g === null) break;
      classes.push(g);
    }
    if (classes.length === stridesPerLeaf.length)
      return { outer: inner === 0 ? 0 : total / inner, inner, split: k, classes };
  }
  return null;
}

/**
 * The leaf's step from one outer index to the next when its inner axes are contiguous like the
 * output's and its outer axes advance by one pitch per outer index; null otherwise.
 */
export function rowPitch(st: number[], shape: number[], dense: number[], k: number, inner: number): number | null {
  let pitch: number | null = null;
  for (let a = 0; a < shape.length; a++) {
    if (shape[a] === 1) continue;
    const s = st[a] as number;
    if (a >= k) {
      if (s !== dense[a]) return null;
      continue;
    }
    // Outer axis a advances the outer index by dense[a] / inner: the leaf by that many pitches.
    const per = (dense[a] as number) / inner;
    const p = s / per;
    if (!Number.isInteger(p) || (pitch !== null && p !== pitch)) return null;
    pitch = p;
  }
  return pitch ?? inner;
}

function classify(st: number[], shape: number[], dense: number[], k: number, inner: number): LeafClass | null {
  let zero = true;
  let same = true;
  let row = true;
  let col = true;
  for (let a = 0; a < shape.length; a++) {
    if (shape[a] === 1) continue;
    const s = st[a] as number;
    const d = dense[a] as number;
    if (s !== 0) zero = false;
    if (s !== d) same = false;
    if (a < k) {
      if (s !== 0) row = false;
      if (s * inner !== d) col = false;
    } else {
      if (s !== d) row = false;
      if (s !== 0) col = false;
    }
  }
  return zero ? "s" : same ? "d" : row ? "r" : col ? "c" : null;
}

interface Value {
  code: string;
  type: ElemType;
  /** 0: loop invariant, 1: varies with the outer index only, 2: varies in the inner loop. */
  level: number;
}

/**
 * Generates the loop; null when some node's types are outside the generator. `literals[k]`
 * is the value of a one-element constant leaf, written into the code (so `max(x, 0)` can
 * become the branch-free ReLU).
 */
export function generate(
  tree: Node,
  leaves: NDArray[],
  shape: number[],
  layout: Layout | null,
  literals: (number | null)[],
): { loop: Loop; outType: ElemType } | null {
  if (leaves.some((l) => isComplexType(l.type) || l.type.startsWith("f8"))) return null;
  const buckets: string[][] = [[], [], []];
  let counter = 0;
  const leafLevel = (k: number): number => {
    if (!layout) return 2;
    const c = layout.classes[k];
    return c === "s" ? 0 : c === "c" ? 1 : 2;
  };
  const index = (k: number): string => {
    if (!layout) return `p${k}`;
    const c = layout.classes[k];
    if (c === "g") {
      buckets[1]?.push(`const g${k} = off[${k}] + i * pitch[${k}];`);
      return `g${k} + j`;
    }
    return c === "d" ? "w" : c === "r" ? "j" : c === "c" ? "i" : "0";
  };
  const emit = (n: Node): Value | null => {
    if (n.kind === "leaf" || n.kind === "broadcast" || n.kind === "slice") {
      const k = n.kind === "leaf" ? n.index : n.leaf;
      const type = (leaves[k] as NDArray).type;
      const literal = literals[k];
      if (literal !== null && literal !== undefined) return { code: numberLiteral(literal), type, level: 0 };
      const name = `v${counter++}`;
      const level = leafLevel(k);
      buckets[level]?.push(`const ${name} = ${loadExpr(type, `L${k}`, index(k))};`);
      return { code: name, type, level };
    }
    const kids: Value[] = [];
    for (const c of n.children) {
      const k = emit(c);
      if (!k) return null;
      kids.push(k);
    }
    const r = opExpr(n.op, kids);
    if (!r) return null;
    const name = `v${counter++}`;
    const level = Math.max(0, ...kids.map((k) => k.level));
    buckets[level]?.push(`const ${name} = ${roundExpr(r.type, r.code)};`);
    return { code: name, type: r.type, level };
  };
  const root = emit(tree);
  if (!root || isComplexType(root.type)) return null;
  const decl = leaves.map((_, k) => `const L${k} = leaves[${k}].data;`).join("\n");
  const store = storeStmt(root.type, "out", "w", root.code);
  const [pre, outer, inner] = buckets.map((b) => b.join("\n"));
  let source: string;
  if (layout) {
    source = `${decl}\n${pre}\nlet w = 0;\nfor (let i = 0; i < outer; i++) {\n${outer}\nfor (let j = 0; j < inner; j++) {\n${inner}\n${store}\nw++;\n}\n}`;
  } else {
    source = odometer(leaves.length, shape.length, `${pre}\n${outer}\n${inner}\n${store}\nw++;`, decl);
  }
  let loop = LOOPS.get(source);
  if (!loop) {
    // RELU's scratch is made once per loop, not per call: an allocation in the prologue
    // costs about as much as a ten-element loop.
    const make = new Function("RELU", `return function (${LOOP_PARAMS.join(", ")}) {\n${source}\n};`);
    loop = make(new Float64Array(2)) as Loop;
    LOOPS.set(source, loop);
  }
  return { loop, outType: root.type };
}

/** Any stride pattern: the innermost axis is a strided loop, the outer axes an odometer. */
function odometer(count: number, rank: number, body: string, decl: string): string {
  const ks = Array.from({ length: count }, (_, k) => k);
  const strideDecl = ks.map((k) => `const s${k} = st[${k}]; let b${k} = off[${k}]; const i${k} = s${k}[${rank - 1}];`);
  const ptrs = ks.map((k) => `const p${k} = b${k} + j * i${k};`).join("\n");
  const advance = ks.map((k) => `b${k} += s${k}[d];`).join(" ");
  const rewind = ks.map((k) => `b${k} -= s${k}[d] * shape[d];`).join(" ");
  return `${decl}
${strideDecl.join("\n")}
const n = shape[${rank - 1}];
const idx = new Int32Array(${Math.max(rank - 1, 1)});
let w = 0;
if (outer * inner === 0) return;
for (;;) {
  for (let j = 0; j < n; j++) {
    ${ptrs}
    ${body}
  }
  let d = ${rank - 2};
  for (; d >= 0; d--) {
    idx[d]++; ${advance}
    if (idx[d] < shape[d]) break;
    ${rewind} idx[d] = 0;
  }
  if (d < 0) break;
}`;
}

/**
 * Math.max(x, +0) without a branch on x's sign (see elem/branchless.ts). `x` is always a
 * variable name here. For values of the narrow float types (at most 3.4e38 in magnitude),
 * (x + |x|) * 0.5 is exactly max(x, +0) for every finite x (x + |x| is 2x or +0, both exact in
 * f64), and keeps the loop free of memory traffic: about 1.8 ns an element against 2.2 for
 * the scratch-array form. Infinities and NaN take the other arm, which real data rarely does,
 * so that branch stays predicted; it gives NaN as the canonical NaN in every JIT tier (the
 * scratch-array form returns the NaN it was given once optimised, and the canonical one
 * before). f64 values could overflow 2x, so they keep the scratch-array form: `RELU` is a
 * two-slot scratch of the loop's closure, slot 0 holding +0.
 */
function reluExpr(x: string, t: ElemType): string {
  if (t === "f64") return `(RELU[1] = ${x}, RELU[+(${x} > 0) | +(${x} !== ${x})])`;
  return `(${x} - ${x} === 0 ? (${x} + Math.abs(${x})) * 0.5 : ${x} > 0 ? ${x} : ${x} === ${x} ? 0 : NaN)`;
}

/**
 * max / min against a literal other than zero and NaN (a clip's bounds): Math.max's result with
 * compares that data inside the bounds always answers the same way, where H.maxFloat's
 * branch-free form pays its memory traffic on every element. With no zero bound there is no
 * signed-zero case; NaN operands give NaN.
 */
function clampBound(n: string, a: Value, b: Value): string | null {
  const literal = (v: Value) => /^\(?-?(\d|Infinity)/.test(v.code) && Number(v.code.replace(/[()]/g, "")) !== 0;
  if (literal(a) === literal(b)) return null;
  const [x, c] = literal(b) ? [a.code, b.code] : [b.code, a.code];
  const op = n === "maximum" ? ">" : "<";
  return `(${x} ${op} ${c} ? ${x} : ${x} === ${x} ? ${c} : ${x})`;
}

function numberLiteral(x: number): string {
  if (Object.is(x, -0)) return "(-0)";
  if (Number.isNaN(x)) return "NaN";
  return x < 0 ? `(${x})` : String(x);
}

function opExpr(op: Op, kids: Value[]): { code: string; type: ElemType } | null {
  const n = op.name.replace(/^(stablehlo|chlo)\./, "");
  const [a, b, c] = kids;
  if (!a) return null;
  const t = a.type;
  if (n === "maximum" && b && isFloatType(t)) {
    // The literal "0" is exactly +0 (numberLiteral writes -0 as "(-0)").
    if (b.code === "0") return { code: reluExpr(a.code, t), type: t };
    if (a.code === "0") return { code: reluExpr(b.code, t), type: t };
  }
  if ((n === "maximum" || n === "minimum") && b && isFloatType(t)) {
    const bound = clampBound(n, a, b);
    if (bound) return { code: bound, type: t };
  }
  if (BINARY_OPS.has(n) && b) return { code: binaryExpr(n, t, a.code, b.code), type: t };
  if (UNARY_OPS.has(n)) {
    if (n === "is_finite") return { code: `Number.isFinite(${a.code})`, type: "i1" };
    const special = SPECIAL_FUNCTIONS[n];
    if (special) return isFloatType(t) ? { code: `${special}(${a.code})`, type: t } : null;
    if ((n === "sinh" || n === "cosh") && t !== "f64") return { code: `H.${n}F32(${a.code})`, type: t };
    if (isFloatType(t) && !hasFloatUnary(n)) return null;
    return { code: unaryExpr(n, t, a.code), type: t };
  }
  switch (n) {
    case "compare": {
      if (op.attrs.compare_type === "TOTALORDER" && isFloatType(t)) return null;
      if (!b) return null;
      return { code: compareExpr(String(op.attrs.comparison_direction ?? "EQ"), a.code, b.code), type: "i1" };
    }
    case "select":
      return b && c ? { code: `(${a.code} ? ${b.code} : ${c.code})`, type: b.type } : null;
    case "clamp": {
      if (!b || !c) return null;
      if (domainOf(b.type) === "float")
        return { code: `H.minFloat(H.maxFloat(${b.code}, ${a.code}), ${c.code})`, type: b.type };
      const m = `(${b.code} > ${a.code} ? ${b.code} : ${a.code})`;
      return { code: `(${m} < ${c.code} ? ${m} : ${c.code})`, type: b.type };
    }
    case "convert": {
      const r = op.resultTypes[op.resultTypes.length - 1];
      if (!isTensorType(r) || isComplexType(r.elem)) return null;
      return { code: convertExpr(t, r.elem, a.code), type: r.elem };
    }
  }
  return null;
}
