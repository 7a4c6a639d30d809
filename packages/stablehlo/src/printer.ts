import type { NDArray } from "./elements.ts";
import { type Attr, type Func, type Module, type Op, type Region, type ValueType, formatType } from "./ir.ts";

/**
 * The program model as StableHLO text in MLIR's generic op form, for people to read a module
 * file whatever its form. Values are renumbered (`%0`, `%1:2` ...); the text parser reads the
 * output back to the same program.
 */
export function printModule(m: Module): string {
  const out: string[] = [m.name ? `module @${m.name} {` : "module {"];
  for (const f of m.funcs) out.push(...printFunc(f));
  out.push("}");
  return `${out.join("\n")}\n`;
}

const ENUM_ATTRS: Record<string, string> = {
  comparison_direction: "comparison_direction",
  compare_type: "comparison_type",
  fft_type: "fft_type",
  rng_distribution: "rng_distribution",
  rng_algorithm: "rng_algorithm",
  transpose_a: "transpose",
};
const STRUCT_ATTRS: Record<string, Record<string, string>> = {
  "stablehlo.dot_general": { dot_dimension_numbers: "#stablehlo.dot" },
  "stablehlo.convolution": { dimension_numbers: "#stablehlo.conv" },
  "stablehlo.dynamic_conv": { dimension_numbers: "#stablehlo.conv" },
  "stablehlo.gather": { dimension_numbers: "#stablehlo.gather" },
  "stablehlo.dynamic_gather": { dimension_numbers: "#stablehlo.gather" },
  "stablehlo.scatter": { scatter_dimension_numbers: "#stablehlo.scatter" },
};

function printFunc(f: Func): string[] {
  const names = new Map<string, string>();
  let next = 0;
  const name = (n: string) => names.get(n) ?? n;
  const args = f.args.map((a, i) => {
    names.set(a.name, `%arg${i}`);
    return `%arg${i}: ${formatType(a.type)}`;
  });
  const results = f.resultTypes.map(formatType).join(", ");
  const head = `  func.func ${f.isPublic ? "public" : "private"} @${f.name}(${args.join(", ")}) -> (${results})`;
  if (f.body.length === 0) return [head];
  const lines = [`${head} {`];
  const op = (o: Op, indent: string): void => {
    const operands = o.operands.map(name).join(", ");
    const regions = o.regions.length > 0 ? ` (${o.regions.map((r) => region(r, indent)).join(", ")})` : "";
    let lhs = "";
    if (o.results.length > 0) {
      const base = `%${next++}`;
      if (o.results.length === 1) names.set(o.results[0] as string, base);
      else for (const [i, r] of o.results.entries()) names.set(r, `${base}#${i}`);
      lhs = `${o.results.length === 1 ? base : `${base}:${o.results.length}`} = `;
    }
    const attrs = Object.entries(o.attrs).map(([k, v]) => `${k} = ${attrText(o.name, k, v)}`);
    const dict = attrs.length > 0 ? ` {${attrs.join(", ")}}` : "";
    const operandTypes = (o.operandTypes ?? []).map(typeOf).join(", ");
    const resultTypes = o.name.endsWith(".return") ? "" : o.resultTypes.map(typeOf).join(", ");
    lines.push(`${indent}${lhs}"${o.name}"(${operands})${regions}${dict} : (${operandTypes}) -> (${resultTypes})`);
  };
  const region = (r: Region, indent: string): string => {
    const start = lines.length;
    const args = r.args.map((a) => {
      const n = `%${next++}`;
      names.set(a.name, n);
      return `${n}: ${formatType(a.type)}`;
    });
    for (const o of r.ops) op(o, `${indent}    `);
    const body = lines.splice(start).join("\n");
    return `{\n${indent}  ^bb0(${args.join(", ")}):\n${body}\n${indent}  }`;
  };
  for (const o of f.body) op(o, "    ");
  lines.push("  }");
  return lines;
}

function typeOf(t: ValueType): string {
  return formatType(t);
}

/** Attributes StableHLO holds as dense arrays (`array<i64: ...>`). */
const DENSE_ARRAYS = new Set([
  "broadcast_dimensions",
  "broadcast_sizes",
  "permutation",
  "dimensions",
  "slice_sizes",
  "start_indices",
  "limit_indices",
  "strides",
  "edge_padding_low",
  "edge_padding_high",
  "interior_padding",
  "window_dimensions",
  "window_strides",
  "base_dilations",
  "window_dilations",
  "lhs_dilation",
  "rhs_dilation",
  "fft_length",
  "known_expanding_dimensions",
  "known_nonexpanding_dimensions",
]);

function attrText(opName: string, key: string, v: Attr): string {
  if (DENSE_ARRAYS.has(key) && Array.isArray(v) && v.every((x) => typeof x === "number")) {
    return v.length === 0 ? "array<i64>" : `array<i64: ${v.join(", ")}>`;
  }
  if (key === "window_reversal" && Array.isArray(v) && v.every((x) => typeof x === "boolean")) {
    return v.length === 0 ? "array<i1>" : `array<i1: ${v.join(", ")}>`;
  }
  if (key === "callee" && typeof v === "string") return `@${v}`;
  const enumName = ENUM_ATTRS[key];
  if (enumName && typeof v === "string") return `#stablehlo<${enumName} ${v}>`;
  if (key === "precision_config" && Array.isArray(v))
    return `[${v.map((p) => `#stablehlo<precision ${p}>`).join(", ")}]`;
  const struct = STRUCT_ATTRS[opName]?.[key];
  if (struct && v && typeof v === "object" && !Array.isArray(v) && !isDense(v)) {
    const fields = Object.entries(v).map(([k, x]) => `${k} = ${value(x)}`);
    return `${struct}<${struct === "#stablehlo.conv" ? "raw " : ""}${fields.join(", ")}>`;
  }
  return value(v);
}

function isDense(v: object): v is NDArray {
  return "data" in v && "shape" in v && "type" in v;
}

function value(v: Attr): string {
  if (typeof v === "number") return Number.isInteger(v) ? String(v) : `${v.toExponential()} : f64`;
  if (typeof v === "boolean") return String(v);
  if (typeof v === "string") return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(value).join(", ")}]`;
  if ("symbol" in v && Object.keys(v).length === 1) return `@${(v as { symbol: string }).symbol}`;
  if (isDense(v)) return denseText(v);
  return `{${Object.entries(v)
    .map(([k, x]) => `${/^[A-Za-z_][\w.]*$/.test(k) ? k : JSON.stringify(k)} = ${value(x)}`)
    .join(", ")}}`;
}

function denseText(a: NDArray): string {
  const bytes = new Uint8Array(a.data.buffer, a.data.byteOffset, a.data.byteLength);
  let hex = "";
  for (const b of bytes) hex += b.toString(16).padStart(2, "0").toUpperCase();
  return `dense<"0x${hex}"> : ${formatType({ kind: "tensor", elem: a.type, shape: a.shape })}`;
}
