import {
  type ElemType,
  type NDArray,
  type TypedArray,
  allocData,
  elementCount,
  isComplexType,
  isFloatType,
  strides,
} from "../array.ts";
import { HELPERS } from "../elem/helpers.ts";
import type { Op } from "../ir.ts";
import { isTensorType } from "../ir.ts";
import { BINARY_OPS, UNARY_OPS } from "../kernels/elementwise-ops.ts";
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

type Node =
  | { kind: "leaf"; index: number }
  | { kind: "op"; op: Op; children: Node[] }
  | { kind: "broadcast"; op: Op; leaf: number };

const SPECIAL: Record<string, string> = {
  lgamma: "H.lgamma",
  digamma: "H.digamma",
  erf: "H.erf",
  erfc: "H.erfc",
  erf_inv: "H.erfInv",
  bessel_i1e: "H.besselI1e",
};

function shortName(op: Op): string {
  return op.name.replace(/^(stablehlo|chlo)\./, "");
}

export function isFusible(op: Op): boolean {
  if (!op.name.startsWith("stablehlo.") && !op.name.startsWith("chlo.")) return false;
  const n = shortName(op);
  if (op.results.length !== 1 || !isTensorType(op.resultTypes[op.resultTypes.length - 1])) return false;
  return BINARY_OPS.has(n) || UNARY_OPS.has(n) || ["compare", "select", "clamp", "convert"].includes(n);
}

/**
 * Rewrites a block's steps: fusible trees become single steps. `useCount` counts every use of
 * a slot in the block (step inputs, region captures, block results).
 */
export function fuseSteps(
  steps: Step[],
  uses: number[][],
  useCount: Map<number, number>,
): { steps: Step[]; uses: number[][] } {
  const producer = new Map<number, number>();
  steps.forEach((s, i) => {
    for (const o of s.outputs) producer.set(o, i);
  });
  const absorbed = new Set<number>();
  const replaced = new Map<number, { step: Step; uses: number[] }>();
  for (let i = steps.length - 1; i >= 0; i--) {
    const root = steps[i] as Step;
    if (absorbed.has(i) || !isFusible(root.op)) continue;
    const leaves: number[] = [];
    const members: Step[] = [];
    let size = 0;
    const build = (step: Step): Node => {
      members.push(step);
      size++;
      const children = step.inputs.map((slot): Node => {
        const p = producer.get(slot);
        const ps = p === undefined ? undefined : steps[p];
        if (ps && p !== undefined && !absorbed.has(p) && useCount.get(slot) === 1) {
          if (isFusible(ps.op)) {
            absorbed.add(p);
            return build(ps);
          }
          if (ps.op.name === "stablehlo.broadcast_in_dim") {
            absorbed.add(p);
            members.push(ps);
            size++;
            leaves.push(ps.inputs[0] as number);
            return { kind: "broadcast", op: ps.op, leaf: leaves.length - 1 };
          }
        }
        leaves.push(slot);
        return { kind: "leaf", index: leaves.length - 1 };
      });
      return { kind: "op", op: step.op, children };
    };
    const tree = build(root);
    if (size < 2) continue;
    members.reverse(); // producers first, for the fallback path
    const kernel = fusedKernel(tree, root.op, members, leaves);
    const fusedUses = new Set<number>(leaves);
    for (const m of members)
      for (const u of uses[steps.indexOf(m)] ?? []) if (!members.some((x) => x.outputs.includes(u))) fusedUses.add(u);
    replaced.set(i, {
      step: { op: root.op, label: "fused elementwise", inputs: leaves, outputs: root.outputs, kernel, frees: [] },
      uses: [...fusedUses],
    });
  }
  const outSteps: Step[] = [];
  const outUses: number[][] = [];
  steps.forEach((s, i) => {
    if (absorbed.has(i)) return;
    const r = replaced.get(i);
    outSteps.push(r ? r.step : s);
    outUses.push(r ? r.uses : (uses[i] as number[]));
  });
  return { steps: outSteps, uses: outUses };
}

type Loop = (leaves: TypedArray[], out: TypedArray, shape: number[], st: number[][], h: typeof HELPERS) => void;

function fusedKernel(tree: Node, root: Op, members: Step[], leafSlots: number[]): Kernel {
  const rootType = root.resultTypes[root.resultTypes.length - 1];
  const staticShape = isTensorType(rootType) ? rootType.shape : [];
  const staticCount = elementCount(staticShape);
  const directLeaves = collectDirectLeaves(tree);
  const cache = new Map<string, { loop: Loop; outType: ElemType } | null>();
  return (args, frame) => {
    const leaves = args as NDArray[];
    // Regions evaluated over whole arrays (kernels/region.ts) run ops typed as scalars on
    // arrays: the values, not the printed type, give the shape then.
    let outShape = staticShape;
    for (const k of directLeaves) {
      const l = leaves[k] as NDArray;
      if (elementCount(l.shape) > staticCount) outShape = l.shape;
    }
    const stridesPerLeaf = leafStrides(tree, leaves, outShape);
    const flat = flatPattern(stridesPerLeaf, outShape);
    const key = `${leaves.map((l) => `${l.type}:${l.shape.length}`).join(",")}|${outShape.length}|${flat ?? "strided"}`;
    let compiled = cache.get(key);
    if (compiled === undefined) {
      compiled = generate(tree, leaves, outShape, flat);
      cache.set(key, compiled);
    }
    if (compiled === null) return fallback(members, leafSlots, leaves, frame);
    const out = allocData(compiled.outType, elementCount(outShape));
    compiled.loop(
      leaves.map((l) => l.data),
      out,
      outShape,
      stridesPerLeaf,
      HELPERS,
    );
    return [{ type: compiled.outType, shape: [...outShape], data: out }];
  };
}

/**
 * When every leaf is either laid out like the output or a single broadcast element, the loop
 * can run flat over the elements (no odometer): "d" dense, "s" scalar per leaf. null otherwise.
 */
function flatPattern(stridesPerLeaf: number[][], outShape: number[]): string | null {
  const dense = strides(outShape);
  let pattern = "";
  for (const st of stridesPerLeaf) {
    if (st.every((x) => x === 0)) pattern += "s";
    else if (st.every((x, d) => x === dense[d] || (outShape[d] as number) === 1)) pattern += "d";
    else return null;
  }
  return pattern;
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

/** Per leaf, its element stride along each output axis (0 where it is broadcast). */
function leafStrides(tree: Node, leaves: NDArray[], outShape: number[]): number[][] {
  const out: number[][] = leaves.map((l) => {
    if (elementCount(l.shape) === 1) return outShape.map(() => 0);
    return strides(outShape);
  });
  const visit = (n: Node) => {
    if (n.kind === "broadcast") {
      const leaf = leaves[n.leaf] as NDArray;
      const dims = (n.op.attrs.broadcast_dimensions as number[]).map(Number);
      const inStrides = strides(leaf.shape);
      const st = outShape.map(() => 0);
      dims.forEach((d, i) => {
        st[d] = (leaf.shape[i] as number) === 1 ? 0 : (inStrides[i] as number);
      });
      out[n.leaf] = st;
    } else if (n.kind === "op") n.children.forEach(visit);
  };
  visit(tree);
  return out;
}

/** Generates the loop; null when some node's types are outside the generator. */
function generate(
  tree: Node,
  leaves: NDArray[],
  outShape: number[],
  flat: string | null,
): { loop: Loop; outType: ElemType } | null {
  if (leaves.some((l) => isComplexType(l.type) || l.type.startsWith("f8"))) return null;
  const lines: string[] = [];
  let counter = 0;
  const emit = (n: Node): { code: string; type: ElemType } | null => {
    if (n.kind === "leaf" || n.kind === "broadcast") {
      const index = n.kind === "leaf" ? n.index : n.leaf;
      const type = (leaves[index] as NDArray).type;
      const name = `v${counter++}`;
      lines.push(`const ${name} = ${loadExpr(type, `L${index}`, `p${index}`)};`);
      return { code: name, type };
    }
    const kids: { code: string; type: ElemType }[] = [];
    for (const c of n.children) {
      const k = emit(c);
      if (!k) return null;
      kids.push(k);
    }
    const r = opExpr(n.op, kids);
    if (!r) return null;
    const name = `v${counter++}`;
    lines.push(`const ${name} = ${roundExpr(r.type, r.code)};`);
    return { code: name, type: r.type };
  };
  const root = emit(tree);
  if (!root) return null;
  const rank = outShape.length;
  const body = `${lines.join("\n")}\n${storeStmt(root.type, "out", "w", root.code)}\nw++;`;
  const decl = leaves.map((_, k) => `const L${k} = leaves[${k}]; const s${k} = st[${k}]; let b${k} = 0;`).join("\n");
  let source: string;
  if (rank === 0) {
    source = `${decl}\nlet w = 0;\n${leaves.map((_, k) => `const p${k} = 0;`).join("\n")}\n${body}`;
  } else if (flat !== null) {
    const ptrs = leaves.map((_, k) => `const p${k} = ${flat[k] === "s" ? "0" : "w"};`).join("\n");
    source = `${decl}\nconst total = out.length / ${isComplexType(root.type) ? 2 : 1};\nfor (let w = 0; w < total; ) {\n${ptrs}\n${body}\n}`;
  } else {
    const inner = leaves.map((_, k) => `const i${k} = s${k}[${rank - 1}];`).join("\n");
    const ptrs = leaves.map((_, k) => `const p${k} = b${k} + j * i${k};`).join("\n");
    // odometer over the outer axes
    const advance = leaves.map((_, k) => `b${k} += s${k}[d];`).join(" ");
    const rewind = leaves.map((_, k) => `b${k} -= s${k}[d] * shape[d];`).join(" ");
    source = `${decl}
${inner}
const n = shape[${rank - 1}];
const idx = new Int32Array(${Math.max(rank - 1, 1)});
let w = 0;
const total = shape.reduce((a, b) => a * b, 1);
if (total === 0) return;
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
  const loop = new Function("leaves", "out", "shape", "st", "H", source) as Loop;
  return { loop, outType: root.type };
}

function opExpr(op: Op, kids: { code: string; type: ElemType }[]): { code: string; type: ElemType } | null {
  const n = shortName(op);
  const [a, b, c] = kids;
  if (!a) return null;
  const t = a.type;
  if (BINARY_OPS.has(n) && b) return { code: binaryExpr(n, t, a.code, b.code), type: t };
  if (UNARY_OPS.has(n)) {
    if (n === "is_finite") return { code: `Number.isFinite(${a.code})`, type: "i1" };
    const special = SPECIAL[n];
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
        return { code: `Math.min(Math.max(${b.code}, ${a.code}), ${c.code})`, type: b.type };
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
