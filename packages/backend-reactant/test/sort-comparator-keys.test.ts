import { describe, expect, test } from "bun:test";
import type { NDArray } from "../src/array.ts";
import { parseModule } from "@xlaserve/stablehlo";
import { comparatorKey } from "../src/kernels/heavy/comparator-key.ts";
import { Arena } from "../src/plan/arena.ts";
import { Program } from "../src/plan/program.ts";

/**
 * Sorts whose comparator orders by one key (top_k's `compare GT, a, b, TOTALORDER`, argsort's
 * canonicalized `compare LT, g(a), g(b)`) take the key path; they must give exactly what the
 * region gives. The region path is forced by wrapping the same comparison in an `and` with true,
 * which the recogniser does not take.
 */
const N = 300;

function module(body: string, keyType: string): string {
  return `
func.func @main(%x: tensor<2x${N}x${keyType}>, %i: tensor<2x${N}xi32>) -> (tensor<2x${N}x${keyType}>, tensor<2x${N}xi32>) {
  %nan = stablehlo.constant dense<0x7FC00000> : tensor<f32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %true = stablehlo.constant dense<true> : tensor<i1>
  %r:2 = "stablehlo.sort"(%x, %i) <{dimension = 1 : i64, is_stable = true}> ({
  ^bb0(%a: tensor<${keyType}>, %b: tensor<${keyType}>, %c: tensor<i32>, %d: tensor<i32>):
${body}
  }) : (tensor<2x${N}x${keyType}>, tensor<2x${N}xi32>) -> (tensor<2x${N}x${keyType}>, tensor<2x${N}xi32>)
  return %r#0, %r#1 : tensor<2x${N}x${keyType}>, tensor<2x${N}xi32>
}`;
}

const CANONICAL = (s: string) => `
    %${s}0 = stablehlo.compare EQ, %${s}, %zero, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %${s}1 = stablehlo.select %${s}0, %zero, %${s} : tensor<i1>, tensor<f32>
    %${s}2 = stablehlo.compare NE, %${s}, %${s}, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %${s}3 = stablehlo.select %${s}2, %nan, %${s}1 : tensor<i1>, tensor<f32>`;

const CASES: { name: string; type: string; compare: (l: string, r: string) => string; pre?: string }[] = [
  { name: "top_k: GT TOTALORDER on the operand", type: "f32", compare: (l, r) => `GT, ${l}, ${r}, TOTALORDER` },
  { name: "LT FLOAT with NaNs (not a strict weak order)", type: "f32", compare: (l, r) => `LT, ${l}, ${r}, FLOAT` },
  { name: "arguments swapped: GT(b, a) is LT(a, b)", type: "f32", compare: (l, r) => `GT, ${r}, ${l}, TOTALORDER` },
  {
    name: "argsort's -0 and NaN canonicalization",
    type: "f32",
    pre: CANONICAL("a") + CANONICAL("b"),
    compare: () => "LT, %a3, %b3, TOTALORDER",
  },
  { name: "integers, descending", type: "i32", compare: (l, r) => `GT, ${l}, ${r}, SIGNED` },
];

function run(text: string, x: NDArray): NDArray[] {
  const program = new Program(parseModule(text, "sort.mlir"));
  const i: NDArray = { type: "i32", shape: [2, N], data: Int32Array.from({ length: 2 * N }, (_, k) => k) };
  return program.func("main").invoke([x, i], { arena: new Arena(), failures: [] }) as NDArray[];
}

function input(type: string): NDArray {
  let seed = 7;
  const next = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  if (type === "i32") {
    return { type: "i32", shape: [2, N], data: Int32Array.from({ length: 2 * N }, () => Math.floor(next() * 20) - 10) };
  }
  const specials = [Number.NaN, -Number.NaN, 0, -0, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY];
  const data = Float32Array.from({ length: 2 * N }, () => {
    const u = next();
    return u < 0.2 ? (specials[Math.floor(u * 30)] as number) : Math.round((u - 0.5) * 16);
  });
  // A negative NaN with a payload, so canonicalization has something to do.
  new Uint32Array(data.buffer)[3] = 0xffc00001;
  return { type: "f32", shape: [2, N], data };
}

describe("sort comparators recognised as one key give the region's order", () => {
  for (const c of CASES) {
    test(c.name, () => {
      const l = c.pre ? "" : "%a";
      const r = c.pre ? "" : "%b";
      const fast = `${c.pre ?? ""}
    %k = stablehlo.compare ${c.compare(l, r)} : (tensor<${c.type}>, tensor<${c.type}>) -> tensor<i1>
    stablehlo.return %k : tensor<i1>`;
      const slow = `${c.pre ?? ""}
    %k = stablehlo.compare ${c.compare(l, r)} : (tensor<${c.type}>, tensor<${c.type}>) -> tensor<i1>
    %k2 = stablehlo.and %k, %true : tensor<i1>
    stablehlo.return %k2 : tensor<i1>`;
      const fastText = module(fast, c.type);
      const region = parseModule(fastText, "sort.mlir").funcs[0]?.body.find((o) => o.name === "stablehlo.sort")
        ?.regions[0];
      expect(region && comparatorKey(region)).not.toBeNull();
      const x = input(c.type);
      const [fk, fi] = run(fastText, x);
      const [sk, si] = run(module(slow, c.type), x);
      expect(Array.from((fi as NDArray).data as Int32Array)).toEqual(Array.from((si as NDArray).data as Int32Array));
      expect(new Uint8Array((fk as NDArray).data.buffer)).toEqual(new Uint8Array((sk as NDArray).data.buffer));
    });
  }

  test("comparators of two keys, or of different functions of each side, are not taken", () => {
    const two = `
    %e = stablehlo.compare LT, %a, %b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %f = stablehlo.compare LT, %c, %d, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %k = stablehlo.or %e, %f : tensor<i1>
    stablehlo.return %k : tensor<i1>`;
    const mixed = `
    %n = stablehlo.negate %a : tensor<f32>
    %k = stablehlo.compare LT, %n, %b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %k : tensor<i1>`;
    for (const body of [two, mixed]) {
      const region = parseModule(module(body, "f32"), "sort.mlir").funcs[0]?.body.find(
        (o) => o.name === "stablehlo.sort",
      )?.regions[0];
      expect(region).toBeDefined();
      expect(comparatorKey(region as NonNullable<typeof region>)).toBeNull();
    }
  });
});

describe("a sort read only through prefix slices (top_k) selects the first K", () => {
  const topK = (k: number, alsoFull: boolean, type: string) => `
func.func @main(%x: tensor<2x${N}x${type}>, %i: tensor<2x${N}xi32>) -> (tensor<2x${k}x${type}>, tensor<2x${k}xi32>${alsoFull ? `, tensor<2x${N}xi32>` : ""}) {
  %r:2 = "stablehlo.sort"(%x, %i) <{dimension = 1 : i64, is_stable = true}> ({
  ^bb0(%a: tensor<${type}>, %b: tensor<${type}>, %c: tensor<i32>, %d: tensor<i32>):
    %k = stablehlo.compare GT, %a, %b, ${type === "f32" ? "TOTALORDER" : "SIGNED"} : (tensor<${type}>, tensor<${type}>) -> tensor<i1>
    stablehlo.return %k : tensor<i1>
  }) : (tensor<2x${N}x${type}>, tensor<2x${N}xi32>) -> (tensor<2x${N}x${type}>, tensor<2x${N}xi32>)
  %v = stablehlo.slice %r#0 [0:2, 0:${k}] : (tensor<2x${N}x${type}>) -> tensor<2x${k}x${type}>
  %j = stablehlo.slice %r#1 [0:2, 0:${k}] : (tensor<2x${N}xi32>) -> tensor<2x${k}xi32>
  return %v, %j${alsoFull ? ", %r#1" : ""} : tensor<2x${k}x${type}>, tensor<2x${k}xi32>${alsoFull ? `, tensor<2x${N}xi32>` : ""}
}`;
  // k up to 32 keeps a sorted run, more a heap; LT selects the smallest instead.
  for (const [type, k, dir] of [
    ["f32", 7, "GT"],
    ["f32", 1, "GT"],
    ["i32", 16, "GT"],
    ["f32", 37, "GT"],
    ["i32", 37, "GT"],
    ["f32", 9, "LT"],
    ["f32", 37, "LT"],
  ] as const) {
    test(`${type}, k = ${k}, ${dir}: the same values and indices as the full sort, ties in index order`, () => {
      const x = input(type);
      const text = (full: boolean) => topK(k, full, type).replace("compare GT", `compare ${dir}`);
      const [sv, si] = run(text(false), x);
      const [fv, fi] = run(text(true), x);
      expect(Array.from((si as NDArray).data as Int32Array)).toEqual(Array.from((fi as NDArray).data as Int32Array));
      expect(new Uint8Array((sv as NDArray).data.buffer)).toEqual(new Uint8Array((fv as NDArray).data.buffer));
    });
  }
});
