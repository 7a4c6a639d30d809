import type { ElemType, NDArray } from "./elements.ts";

/**
 * The parsed module, independent of which textual form (pretty or generic) it came from.
 *
 * Attribute conventions (kernels read these): keys are the StableHLO spec's attribute names in
 * snake_case, whichever syntax the module used (`dims = [1, 0]` on transpose becomes
 * `permutation`, `contracting_dims = [1] x [0]` becomes `dot_dimension_numbers`...).
 * Integer lists are number[]; dense attributes (`padding = dense<...>`) are NDArrays;
 * `#stablehlo.gather<offset_dims = [1], ...>` and friends are plain objects of their fields;
 * enums (`LT`, `FLOAT`, `THREE_FRY`, `DEFAULT`) are strings.
 */

export interface TensorType {
  readonly kind: "tensor";
  readonly elem: ElemType;
  readonly shape: number[];
}

export interface TupleType {
  readonly kind: "tuple";
  readonly items: ValueType[];
}

export interface TokenType {
  readonly kind: "token";
}

/**
 * A type the CPU engine does not run (dynamic or bounded shapes, quantized, index or 4/6-bit
 * elements, futures...), kept as its StableHLO spelling. Only the lenient readers produce it;
 * the engine's reads report such types as UNSUPPORTED instead.
 */
export interface OtherType {
  readonly kind: "other";
  readonly text: string;
}

export type ValueType = TensorType | TupleType | TokenType | OtherType;

export type Attr = number | boolean | string | Attr[] | NDArray | AttrObject | SymbolRef;
export interface AttrObject {
  readonly [key: string]: Attr;
}
export interface SymbolRef {
  readonly symbol: string;
}

export interface BlockArg {
  readonly name: string;
  readonly type: ValueType;
}

/** A single-block region (StableHLO regions never have more than one block). */
export interface Region {
  readonly args: BlockArg[];
  readonly ops: Op[];
}

export interface Op {
  /** Full name: "stablehlo.add", "chlo.top_k", "func.call", "func.return", "check.expect_eq". */
  readonly name: string;
  /** SSA names of the results ("%3", or "%3#0", "%3#1" for `%3:2 = ...`). */
  readonly results: string[];
  readonly operands: string[];
  readonly attrs: Record<string, Attr>;
  readonly regions: Region[];
  readonly resultTypes: ValueType[];
  /** From the trailing function type where the syntax gives one; null otherwise. */
  readonly operandTypes: ValueType[] | null;
  /** Source offset, for error messages. */
  readonly offset: number;
}

export interface Func {
  readonly name: string;
  readonly isPublic: boolean;
  readonly args: BlockArg[];
  readonly resultTypes: ValueType[];
  readonly body: Op[];
}

export interface Module {
  readonly name: string | null;
  readonly funcs: Func[];
}

export function isTensorType(t: ValueType | undefined): t is TensorType {
  return t !== undefined && t.kind === "tensor";
}

export function formatType(t: ValueType): string {
  if (t.kind === "token") return "!stablehlo.token";
  if (t.kind === "tuple") return `tuple<${t.items.map(formatType).join(", ")}>`;
  if (t.kind === "other") return t.text;
  return `tensor<${[...t.shape, t.elem].join("x")}>`;
}
