/**
 * Splitting one fused module's call (fused-simd-module.ts) into contiguous shares for the wasm
 * pool's threads. A module computes each element from the same inputs with the same code
 * wherever its range starts, and writes nothing outside its rows (the last vector of a row
 * overlaps the one before it), so shares give the bits of one call by construction.
 *
 * A share is a range of rows (`outer` indices), its pointers moved to its first row: dense
 * leaves and the output by rows of `inner`, per-row leaves ("c") by one element a row, row
 * leaves ("r") and scalars unmoved. A tree of dense leaves and scalars only, or a call of one
 * row, is split over its elements instead (one long row a share), so few rows split as well.
 */
import type { LeafClass, Node } from "./fused-codegen.ts";
import { MATH } from "./fused-simd-math.ts";

/**
 * Cost units per element of an op, one unit about a vector op per element (0.3-0.5 ns here):
 * tanh / exp / logistic run their polynomials on f64 halves with emulated fused multiply-adds.
 */
const MATH_COST = 20;
const SLOW_COST = 3;
const SLOW = new Set(["divide", "sqrt"]);

/**
 * Cost units per element of one module over `tree` (its loads and ops; `narrow`: its values are
 * rounded to a 16-bit type after each op, a few integer ops more).
 */
export function elementCost(tree: Node, narrow: boolean): number {
  if (tree.kind !== "op") return 1;
  const name = tree.op.name.replace(/^(stablehlo|chlo)\./, "");
  let cost = (MATH[name] ? MATH_COST : SLOW.has(name) ? SLOW_COST : 1) + (narrow ? 2 : 0);
  for (const c of tree.children) cost += elementCost(c, narrow);
  return cost;
}

/**
 * Units one extra share must carry to pay for waking a thread and waiting for it: about 60 us of
 * work, several times the wake-up measured on a loaded 2-core machine (10-40 us, see
 * test/fused-threads.test.ts), so a split never costs more than it saves.
 */
export const MIN_SHARE_UNITS = 150_000;

/** How many shares `elements` elements at `cost` units each are worth on `threads` threads. */
export function sharesFor(elements: number, cost: number, threads: number): number {
  if (threads <= 1) return 1;
  return Math.max(1, Math.min(threads, Math.floor((elements * cost) / MIN_SHARE_UNITS)));
}

/** A module's argument layout: [outer, inner, leaf pointers..., out pointer]. */
export interface SplitLayout {
  /** Per leaf (stages' results included): its class, or null for a literal (no pointer read). */
  readonly classes: readonly (LeafClass | null)[];
  /** Per leaf, bytes per element as the module loads it. */
  readonly sizes: readonly number[];
  readonly outSize: number;
}

/**
 * Whether the module can run over elements as one long row: every leaf it reads is dense or one
 * scalar, or there is one row (its row leaves are then dense and its column leaves scalars).
 */
export function flatSplit(layout: SplitLayout, outer: number): boolean {
  return outer === 1 || layout.classes.every((c) => c === null || c === "d" || c === "s");
}

/**
 * Fills shares[0..n) with the arguments of `n` contiguous ranges of the call `args` and returns
 * n, at most `wanted`: fewer where there are fewer rows (or vectors) than shares, 1 where rows
 * are shorter than a vector (such a row's stores run into the next).
 */
export function splitCall(args: readonly number[], layout: SplitLayout, wanted: number, shares: number[][]): number {
  const outer = args[0] as number;
  const inner = args[1] as number;
  const count = layout.classes.length;
  const flat = flatSplit(layout, outer);
  // Units split: vectors of a flat call, rows otherwise.
  const units = flat ? Math.ceil((outer * inner) / 4) : inner >= 4 ? outer : 1;
  const n = Math.max(1, Math.min(wanted, units));
  for (let s = 0; s < n; s++) {
    const from = Math.floor((units * s) / n);
    const to = Math.floor((units * (s + 1)) / n);
    const share = shares[s] as number[];
    share.length = args.length;
    if (flat) {
      const first = from * 4;
      const last = Math.min(outer * inner, to * 4);
      share[0] = 1;
      share[1] = last - first;
      for (let k = 0; k < count; k++) {
        const c = layout.classes[k];
        const dense = c === "d" || c === "r";
        share[2 + k] = (args[2 + k] as number) + (dense ? first * (layout.sizes[k] as number) : 0);
      }
      share[2 + count] = (args[2 + count] as number) + first * layout.outSize;
    } else {
      share[0] = to - from;
      share[1] = inner;
      for (let k = 0; k < count; k++) {
        const c = layout.classes[k];
        const step = c === "d" ? inner : c === "c" ? 1 : 0;
        share[2 + k] = (args[2 + k] as number) + from * step * (layout.sizes[k] as number);
      }
      share[2 + count] = (args[2 + count] as number) + from * inner * layout.outSize;
    }
  }
  return n;
}
