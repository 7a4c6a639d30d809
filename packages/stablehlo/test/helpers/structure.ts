import type { NDArray } from "../../src/elements.ts";
import type { Attr, Func, Module, Op, Region, ValueType } from "../../src/ir.ts";
import { formatType } from "../../src/ir.ts";

/**
 * A module as plain data for structural comparison: value names replaced by their order of
 * definition, locations and source offsets dropped, dense data as hex, and the few spellings
 * that mean the same thing made one (an i64 `dense<[..]>` dimension list and `array<i64: ..>`,
 * a symbol reference and its name, an all-default result_accuracy and none).
 */
export function structure(m: Module): unknown {
  return { funcs: m.funcs.map(func) };
}

function func(f: Func): unknown {
  // Sibling regions may reuse names (`%arg1` in both branches): each region is its own scope.
  let names = new Map<string, string>();
  let count = 0;
  const define = (n: string) => {
    const numbered = `%${count++}`;
    names.set(n, numbered);
    return numbered;
  };
  const use = (n: string) => names.get(n) ?? `?${n}`;
  const op = (o: Op): unknown => {
    const operands = o.operands.map(use);
    const regions = o.regions.map(region);
    const results = o.results.map(define);
    return {
      name: o.name,
      results,
      operands,
      attrs: attrs(o.attrs, o.name),
      // A return's type list is its operands' in the pretty form and empty in the generic one.
      resultTypes: o.name.endsWith(".return") ? [] : o.resultTypes.map(formatType),
      regions,
    };
  };
  const region = (r: Region): unknown => {
    const outer = names;
    names = new Map(outer);
    const out = { args: r.args.map((a) => [define(a.name), formatType(a.type)]), ops: r.ops.map(op) };
    names = outer;
    return out;
  };
  return {
    name: f.name,
    isPublic: f.isPublic,
    args: f.args.map((a) => [define(a.name), formatType(a.type)]),
    resultTypes: f.resultTypes.map((t: ValueType) => formatType(t)),
    body: f.body.map(op),
  };
}

/** StableHLO defaults some texts spell out; the model treats an absent attribute as its default. */
const DEFAULTS: Record<string, Record<string, string>> = {
  "stablehlo.custom_call": {
    api_version: "1",
    has_side_effect: "false",
    backend_config: '""',
    called_computations: "[]",
    operand_layouts: "[]",
    result_layouts: "[]",
    output_operand_aliases: "[]",
  },
};

function attrs(a: Record<string, Attr>, opName = ""): unknown {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(a).sort()) {
    const v = a[key] as Attr;
    if (key === "result_accuracy" && isDefaultAccuracy(v)) continue;
    // func.call's callee: a name (pretty form) or a symbol reference (generic form).
    if (key === "callee" && typeof v === "string") {
      out[key] = `@${v}`;
      continue;
    }
    const d = DEFAULTS[opName]?.[key];
    if (d !== undefined && JSON.stringify(v) === d) continue;
    out[key] = attr(v);
  }
  return out;
}

function isDefaultAccuracy(v: Attr): boolean {
  const o = v as Record<string, Attr>;
  return typeof o === "object" && o !== null && o.atol === 0 && o.rtol === 0 && o.ulps === 0 && o.mode === "DEFAULT";
}

function attr(v: Attr): unknown {
  if (Array.isArray(v)) return v.map(attr);
  if (typeof v !== "object" || v === null) return v;
  if ("symbol" in v && Object.keys(v).length === 1) return `@${(v as { symbol: string }).symbol}`;
  if ("data" in v && "shape" in v && "type" in v) return dense(v as NDArray);
  return attrs(v as Record<string, Attr>);
}

function dense(a: NDArray): unknown {
  if (a.shape.length === 1 && /^u?i\d+$/.test(a.type) && a.type !== "i1")
    return Array.from(a.data as ArrayLike<number | bigint>, (x) => Number(x));
  const bytes = new Uint8Array(a.data.buffer, a.data.byteOffset, a.data.byteLength);
  return { dense: a.type, shape: a.shape, hex: Buffer.from(bytes).toString("hex") };
}
