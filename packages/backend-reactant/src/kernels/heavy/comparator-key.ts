/**
 * Recognises sort comparators that order by one key: `compare LT|GT, g(lhs_k), g(rhs_k)` where g
 * is the same chain of elementwise ops on both sides (the identity for top_k; JAX's argsort
 * first maps -0 to +0 and every NaN to one NaN). Such a sort computes g once per element and
 * sorts those keys directly instead of running the region for every comparison (the plan
 * compiles g as an extra region of the sort, keyRegion). The merge sort
 * asks the same "does b sort before a" question either way, so the order is the region's.
 */
import type { Op, Region } from "@xlaserve/stablehlo";
import { isTensorType } from "@xlaserve/stablehlo";

export interface ComparatorKey {
  /** Which sort operand the key is computed from. */
  readonly operand: number;
  /** GT (largest first) rather than LT. */
  readonly descending: boolean;
  /** compare_type TOTALORDER. */
  readonly totalOrder: boolean;
  /** The region's ops computing g(lhs_k), in order; empty when g is the identity. */
  readonly keyOps: readonly Op[];
  /** The region argument g reads (lhs_k) and the value holding g(lhs_k). */
  readonly argName: string;
  readonly keyName: string;
}

/** Ops g may use: elementwise on its scalars, no regions, no effects. */
const ELEMENTWISE = new Set(
  [
    "abs",
    "add",
    "and",
    "bitcast_convert",
    "broadcast_in_dim",
    "compare",
    "constant",
    "convert",
    "maximum",
    "minimum",
    "multiply",
    "negate",
    "not",
    "or",
    "reshape",
    "select",
    "subtract",
    "xor",
  ].map((n) => `stablehlo.${n}`),
);

export function comparatorKey(region: Region): ComparatorKey | null {
  const ret = region.ops[region.ops.length - 1];
  if (ret?.name !== "stablehlo.return" || ret.operands.length !== 1) return null;
  const producer = new Map<string, Op>();
  for (const op of region.ops) for (const r of op.results) producer.set(r, op);
  const root = producer.get(ret.operands[0] as string);
  if (root?.name !== "stablehlo.compare" || root.operands.length !== 2) return null;
  const direction = String(root.attrs.comparison_direction ?? "");
  if (direction !== "LT" && direction !== "GT") return null;
  const argIndex = new Map(region.args.map((a, i) => [a.name, i]));
  const [lhs, rhs] = root.operands as [string, string];
  const left = expression(lhs, producer, argIndex);
  const right = expression(rhs, producer, argIndex);
  if (!left || !right || left.args.size !== 1 || right.args.size !== 1) return null;
  const l = [...left.args][0] as number;
  const r = [...right.args][0] as number;
  // Operand k's pair is (2k, 2k + 1); the key must read one side of the same pair on each side.
  if (l >> 1 !== r >> 1 || l === r) return null;
  if (left.text.replaceAll(`@${l}`, "@x") !== right.text.replaceAll(`@${r}`, "@x")) return null;
  const swapped = l > r;
  const totalOrder = String(root.attrs.compare_type ?? "") === "TOTALORDER";
  const keyType = region.args[l]?.type;
  if (!keyType || !isTensorType(keyType)) return null;
  const lowFloat = keyType.elem === "f16" || keyType.elem === "bf16";
  const compared = root.operandTypes?.[0];
  const comparedElem = compared && isTensorType(compared) ? compared.elem : keyType.elem;
  if ((comparedElem === "f16" || comparedElem === "bf16" || lowFloat) && !totalOrder) return null;
  if (comparedElem.startsWith("c") || comparedElem.startsWith("f8")) return null;
  const keyOps = region.ops.filter((op) => left.ops.has(op));
  return {
    operand: l >> 1,
    descending: (direction === "GT") !== swapped,
    totalOrder,
    keyOps,
    argName: (region.args[l] as { name: string }).name,
    keyName: lhs,
  };
}

/**
 * g alone as a region over the comparator's arguments: the plan compiles it like any region
 * (captured constants resolved, the chain fused into one loop), and the sort runs it once over
 * the whole operand.
 */
export function keyRegion(region: Region, key: ComparatorKey): Region {
  const ret = region.ops[region.ops.length - 1] as Op;
  return { args: region.args, ops: [...key.keyOps, { ...ret, operands: [key.keyName] }] };
}

interface Expression {
  readonly text: string;
  readonly args: Set<number>;
  readonly ops: Set<Op>;
}

/** A value's expression tree as canonical text (`@i` for argument i), or null if g can't be. */
function expression(name: string, producer: Map<string, Op>, argIndex: Map<string, number>): Expression | null {
  const args = new Set<number>();
  const ops = new Set<Op>();
  const memo = new Map<string, string | null>();
  const walk = (value: string, depth: number): string | null => {
    const arg = argIndex.get(value);
    if (arg !== undefined) {
      args.add(arg);
      return `@${arg}`;
    }
    const cached = memo.get(value);
    if (cached !== undefined) return cached;
    const op = producer.get(value);
    // A value from outside the region (a captured constant) is the same on both sides.
    if (!op) return `$${value}`;
    if (!ELEMENTWISE.has(op.name) || op.regions.length > 0 || depth > 64) return null;
    const parts: string[] = [];
    for (const operand of op.operands) {
      const t = walk(operand, depth + 1);
      if (t === null) return null;
      parts.push(t);
    }
    ops.add(op);
    const index = op.results.indexOf(value);
    const text = `${op.name}#${index}${stringify(op.attrs)}:${stringify(op.resultTypes)}(${parts.join(",")})`;
    memo.set(value, text);
    return text;
  };
  const text = walk(name, 0);
  return text === null ? null : { text, args, ops };
}

/** JSON with bigints and typed arrays (dense constants) written out, so equal attributes match. */
function stringify(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v === "bigint") return `${v}n`;
    if (ArrayBuffer.isView(v)) return Array.from(v as unknown as ArrayLike<number | bigint>, (x) => String(x));
    return v;
  });
}
