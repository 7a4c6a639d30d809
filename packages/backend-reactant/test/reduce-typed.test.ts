import { describe, expect, test } from "bun:test";
import { parseModule } from "@xlaserve/stablehlo";
import { type ElemType, type NDArray, allocData } from "../src/array.ts";
import { Arena } from "../src/plan/arena.ts";
import { Program } from "../src/plan/program.ts";

/** reduce of x (type[4, 3, 37]) over `dims` with `op` and init `init`, through the plan. */
function run(type: ElemType, op: string, init: string, dims: number[], x: NDArray): NDArray {
  const shape = [4, 3, 37];
  const out = shape.filter((_, d) => !dims.includes(d));
  const t = (s: number[]) => `tensor<${s.length ? `${s.join("x")}x` : ""}${type}>`;
  const text = `func.func @main(%x: ${t(shape)}) -> ${t(out)} {
    %init = stablehlo.constant dense<${init}> : ${t([])}
    %0 = stablehlo.reduce(%x init: %init) applies stablehlo.${op} across dimensions = [${dims.join(", ")}] : (${t(shape)}, ${t([])}) -> ${t(out)}
    return %0 : ${t(out)}
  }`;
  const program = new Program(parseModule(text), { fuse: false });
  return (
    program.func(program.entryName()).invoke([x], { arena: new Arena(), failures: [] }) as NDArray[]
  )[0] as NDArray;
}

/** The contract: each output folds its elements in index order, the accumulator stored as the type after every step. */
function oracle(type: ElemType, op: string, init: number, dims: number[], x: NDArray): number[] {
  const [A, B, C] = [4, 3, 37];
  const acc = allocData(type, 1) as unknown as number[];
  const out: number[] = [];
  // The StableHLO meaning of each reducer on the type: an i1 sum is an or, an i1 product an and.
  const bool = type === "i1";
  const float = type === "f32" || type === "f64";
  const steps: Record<string, (a: number, b: number) => number> = {
    add: (a, b) => (bool ? a | b : a + b),
    multiply: (a, b) => (bool ? a & b : float ? a * b : Math.imul(a, b)),
    maximum: (a, b) => Math.max(a, b),
    minimum: (a, b) => Math.min(a, b),
    and: (a, b) => a & b,
    or: (a, b) => a | b,
    xor: (a, b) => a ^ b,
  };
  const step = steps[op] as (a: number, b: number) => number;
  const at = (a: number, b: number, c: number) => x.data[(a * B + b) * C + c] as number;
  const kept = [0, 1, 2].filter((d) => !dims.includes(d));
  const extent = [A, B, C];
  const keptSizes = kept.map((d) => extent[d] as number);
  const reducedDims = dims;
  const count = keptSizes.reduce((p, n) => p * n, 1);
  for (let k = 0; k < count; k++) {
    const idx = [0, 0, 0];
    let rest = k;
    for (let i = kept.length - 1; i >= 0; i--) {
      idx[kept[i] as number] = rest % (keptSizes[i] as number);
      rest = Math.floor(rest / (keptSizes[i] as number));
    }
    acc[0] = init;
    const total = reducedDims.reduce((p, d) => p * (extent[d] as number), 1);
    for (let r = 0; r < total; r++) {
      let left = r;
      for (let i = reducedDims.length - 1; i >= 0; i--) {
        const d = reducedDims[i] as number;
        idx[d] = left % (extent[d] as number);
        left = Math.floor(left / (extent[d] as number));
      }
      acc[0] = step(acc[0] as number, at(idx[0] as number, idx[1] as number, idx[2] as number));
    }
    out.push(acc[0] as number);
  }
  return out;
}

const INTS: { type: ElemType; values: (i: number) => number }[] = [
  { type: "i1", values: (i) => (i % 5 === 0 ? 0 : 1) },
  { type: "i8", values: (i) => ((i * 37) % 251) - 125 },
  { type: "ui8", values: (i) => (i * 37) % 256 },
  { type: "i16", values: (i) => ((i * 7919) % 65521) - 32760 },
  { type: "ui16", values: (i) => (i * 7919) % 65536 },
  { type: "i32", values: (i) => (i * 2654435761) | 0 },
  { type: "ui32", values: (i) => (i * 2654435761) >>> 0 },
];

describe("integer, boolean and product reductions", () => {
  for (const { type, values } of INTS)
    test(`${type}: every reducer over the last, middle and leading axes folds in index order and wraps like the type`, () => {
      const x: NDArray = { type, shape: [4, 3, 37], data: allocData(type, 444) };
      for (let i = 0; i < 444; i++) (x.data as unknown as number[])[i] = values(i);
      const ops =
        type === "i1"
          ? ["add", "multiply", "and", "or", "xor"]
          : ["add", "multiply", "maximum", "minimum", "and", "or", "xor"];
      for (const op of ops)
        for (const dims of [[2], [1], [0, 1], [0, 2]]) {
          const init = op === "multiply" || op === "and" ? (type === "i1" ? 1 : op === "and" ? -1 : 1) : 0;
          const initText = type === "i1" ? (init ? "true" : "false") : String(init);
          const got = run(type, op, initText, dims, x);
          const want = oracle(type, op, init, dims, x);
          expect({ op, dims, got: [...(got.data as unknown as number[])] }).toEqual({ op, dims, got: want });
        }
    });

  test("a boolean sum is an or: the result stays 0 or 1", () => {
    const x: NDArray = { type: "i1", shape: [4, 3, 37], data: new Uint8Array(444).fill(1) };
    const got = run("i1", "add", "false", [2], x);
    expect([...(got.data as Uint8Array)]).toEqual(new Array(12).fill(1));
  });

  test("f32 and f64 products round after every step", () => {
    for (const type of ["f32", "f64"] as const) {
      const x: NDArray = { type, shape: [4, 3, 37], data: allocData(type, 444) };
      for (let i = 0; i < 444; i++) (x.data as Float64Array)[i] = 1 + Math.sin(i) * 0.3;
      for (const dims of [[2], [0, 1]]) {
        const got = run(type, "multiply", "1.0", dims, x);
        const want = oracle(type, "multiply", 1, dims, x);
        expect([...(got.data as Float64Array)]).toEqual(want);
      }
    }
  });
});
