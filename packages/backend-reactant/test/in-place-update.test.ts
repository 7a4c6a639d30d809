import { describe, expect, test } from "bun:test";
import type { HostTensor } from "@xlaserve/core";
import { parseModule } from "@xlaserve/stablehlo";
import type { NDArray } from "../src/array.ts";
import { createReactantBackend } from "../src/index.ts";
import { Arena } from "../src/plan/arena.ts";
import { Program } from "../src/plan/program.ts";
import { WHILE_I_BELOW_N } from "./helpers/loops.ts";

/** A scan-style loop: row i of a [rows x 4] buffer becomes i+1, for i < n. */
function rowLoop(rows: number, n: number, init: string): string {
  const t = `tensor<${rows}x4xf32>`;
  return `func.func @main(%arg0: ${t}) -> (${t}, ${t}) {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %n = stablehlo.constant dense<${n}> : tensor<i32>
  %fill = stablehlo.constant dense<5.0> : tensor<f32>
  %init = ${init}
  %r:2 = stablehlo.while(%i = %zero, %buf = %init) : tensor<i32>, ${t}
  ${WHILE_I_BELOW_N}
    %next = stablehlo.add %i, %one : tensor<i32>
    %v = stablehlo.convert %next : (tensor<i32>) -> tensor<f32>
    %row = stablehlo.broadcast_in_dim %v, dims = [] : (tensor<f32>) -> tensor<1x4xf32>
    %upd = stablehlo.dynamic_update_slice %buf, %row, %i, %zero : (${t}, tensor<1x4xf32>, tensor<i32>, tensor<i32>) -> ${t}
    stablehlo.return %next, %upd : tensor<i32>, ${t}
  }
  return %r#1, %init : ${t}, ${t}
}`;
}

function expectedRows(rows: number, n: number, rest: (r: number, c: number) => number): number[] {
  const out: number[] = [];
  for (let r = 0; r < rows; r++) for (let c = 0; c < 4; c++) out.push(r < n ? r + 1 : rest(r, c));
  return out;
}

const hostInput = (rows: number): HostTensor => ({
  dtype: "f32",
  shape: [rows, 4],
  data: Float32Array.from({ length: rows * 4 }, (_, i) => 100 + i),
});

async function runTwice(text: string, rows: number): Promise<{ runs: number[][][]; input: number[] }> {
  const b = createReactantBackend();
  const exe = await b.compile({ bytes: new TextEncoder().encode(text), format: "text", origin: "loop.mlir" }, {});
  const arg = await b.upload(hostInput(rows));
  const runs: number[][][] = [];
  for (let k = 0; k < 2; k++) {
    const outs = await b.execute(exe, [arg]);
    const host = await Promise.all(outs.map((o) => b.download(o)));
    runs.push(host.map((h) => Array.from(h.data as Float32Array)));
  }
  const input = Array.from((await b.download(arg)).data as Float32Array);
  return { runs, input };
}

describe("dynamic_update_slice in place", () => {
  test("a loop over a folded constant leaves the constant as it was, run after run", async () => {
    const text = rowLoop(8, 6, "stablehlo.constant dense<7.0> : tensor<8x4xf32>");
    const { runs } = await runTwice(text, 8);
    for (const [loop, init] of runs) {
      expect(loop).toEqual(expectedRows(8, 6, () => 7));
      expect(init).toEqual(new Array(32).fill(7));
    }
  });

  test("a loop over the caller's argument leaves the argument as it was", async () => {
    const text = rowLoop(8, 5, "stablehlo.add %arg0, %arg0 : tensor<8x4xf32>").replace(
      "return %r#1, %init",
      "return %r#1, %arg0",
    );
    const direct = rowLoop(8, 5, "stablehlo.optimization_barrier %arg0 : tensor<8x4xf32>");
    const input = Array.from(hostInput(8).data as Float32Array);
    const a = await runTwice(text, 8);
    for (const [loop, arg] of a.runs) {
      expect(loop).toEqual(expectedRows(8, 5, (r, c) => 2 * (100 + r * 4 + c)));
      expect(arg).toEqual(input);
    }
    const d = await runTwice(direct, 8);
    for (const [loop, init] of d.runs) {
      expect(loop).toEqual(expectedRows(8, 5, (r, c) => 100 + r * 4 + c));
      expect(init).toEqual(input);
    }
    expect(a.input).toEqual(input);
    expect(d.input).toEqual(input);
  });

  test("an operand read after the update keeps its old value", () => {
    const text = `func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %y = stablehlo.add %x, %x : tensor<4xf32>
  %view = stablehlo.reshape %y : (tensor<4xf32>) -> tensor<2x2xf32>
  %u = stablehlo.constant dense<[9.0]> : tensor<1xf32>
  %i = stablehlo.constant dense<1> : tensor<i32>
  %z = stablehlo.dynamic_update_slice %y, %u, %i : (tensor<4xf32>, tensor<1xf32>, tensor<i32>) -> tensor<4xf32>
  %back = stablehlo.reshape %view : (tensor<2x2xf32>) -> tensor<4xf32>
  return %z, %back : tensor<4xf32>, tensor<4xf32>
}`;
    const program = new Program(parseModule(text, "t.mlir"));
    const x: NDArray = { type: "f32", shape: [4], data: new Float32Array([1, 2, 3, 4]) };
    const [z, back] = program.func("main").invoke([x], { arena: new Arena({ pool: true }), failures: [] }) as NDArray[];
    expect(Array.from(z?.data as Float32Array)).toEqual([2, 9, 6, 8]);
    expect(Array.from(back?.data as Float32Array)).toEqual([2, 4, 6, 8]);
  });

  test("a loop's carried buffer is updated in place after the first iteration", () => {
    // 64x128 is past the folding limit: the buffer is made at run time, by the arena.
    const text = rowLoop(64, 10, "stablehlo.broadcast_in_dim %fill, dims = [] : (tensor<f32>) -> tensor<64x4xf32>")
      .replaceAll("tensor<64x4xf32>", "tensor<64x128xf32>")
      .replaceAll("tensor<1x4xf32>", "tensor<1x128xf32>")
      .replace("tensor<8x4xf32>", "tensor<64x128xf32>");
    const program = new Program(parseModule(text, "t.mlir"));
    const arena = new Arena({ pool: true });
    let inPlace = 0;
    const sole = arena.soleOwner.bind(arena);
    arena.soleOwner = (data) => {
      const yes = sole(data);
      if (yes) inPlace++;
      return yes;
    };
    const arg: NDArray = { type: "f32", shape: [64, 128], data: new Float32Array(64 * 128) };
    const [loop] = program.func("main").invoke([arg], { arena, failures: [] }) as NDArray[];
    const data = loop?.data as Float32Array;
    for (let r = 0; r < 64; r++) expect(data[r * 128 + 127]).toBe(r < 10 ? r + 1 : 5);
    // The first iteration copies: the caller's slot still holds the initial buffer (returned too).
    expect(inPlace).toBe(9);
  });

  const countInPlace = (text: string, arg: NDArray): { out: NDArray[]; inPlace: number } => {
    const program = new Program(parseModule(text, "t.mlir"));
    const arena = new Arena({ pool: true });
    let inPlace = 0;
    const sole = arena.soleOwner.bind(arena);
    arena.soleOwner = (data) => {
      const yes = sole(data);
      if (yes) inPlace++;
      return yes;
    };
    return { out: program.func("main").invoke([arg], { arena, failures: [] }) as NDArray[], inPlace };
  };
  const wide = (text: string) =>
    text
      .replaceAll("tensor<64x4xf32>", "tensor<64x128xf32>")
      .replaceAll("tensor<1x4xf32>", "tensor<1x128xf32>")
      .replace("tensor<8x4xf32>", "tensor<64x128xf32>");

  test("a carried buffer that dies at the loop is updated in place from the first iteration", () => {
    const text = wide(
      rowLoop(64, 10, "stablehlo.broadcast_in_dim %fill, dims = [] : (tensor<f32>) -> tensor<64x4xf32>"),
    ).replace("return %r#1, %init", "return %r#1, %arg0");
    const arg: NDArray = { type: "f32", shape: [64, 128], data: new Float32Array(64 * 128).fill(3) };
    const { out, inPlace } = countInPlace(text, arg);
    const data = out[0]?.data as Float32Array;
    for (let r = 0; r < 64; r++) expect(data[r * 128 + 127]).toBe(r < 10 ? r + 1 : 5);
    expect(inPlace).toBe(10);
    expect(Array.from(out[1]?.data as Float32Array).every((v) => v === 3)).toBe(true);
  });

  /** The wide row loop over a broadcast buffer, whose body updates `%keep = add <operands>` instead of %buf. */
  const keepThenUpdate = (n: number, operands: string): string =>
    wide(rowLoop(64, n, "stablehlo.broadcast_in_dim %fill, dims = [] : (tensor<f32>) -> tensor<64x4xf32>"))
      .replace("return %r#1, %init", "return %r#1, %r#1")
      .replace(
        "%upd = stablehlo.dynamic_update_slice %buf,",
        `%keep = stablehlo.add ${operands} : tensor<64x128xf32>\n    %upd = stablehlo.dynamic_update_slice %keep,`,
      );

  test("an operand the body also reads directly keeps its slot and its value", () => {
    // %init goes in as %buf and is read again inside the body: the update must not touch it.
    const text = keepThenUpdate(10, "%init, %buf");
    const arg: NDArray = { type: "f32", shape: [64, 128], data: new Float32Array(64 * 128) };
    const { out } = countInPlace(text, arg);
    const data = out[0]?.data as Float32Array;
    // Every iteration adds %init (5) to the whole buffer, then writes row i as i + 1: row r < 10
    // ends as r + 1 plus 5 for each later iteration, rows from 10 on as 5 plus 5 per iteration.
    for (let r = 0; r < 64; r++) expect(data[r * 128 + 3]).toBe(r < 10 ? r + 1 + 5 * (9 - r) : 5 + 5 * 10);
  });

  test("what an iteration drops is pooled again before the next one, so the pool stays a few buffers deep", () => {
    // Every iteration makes a fresh 64x128 sum before the update: 20 of them would be pooled at
    // the end if none went back to the pool between iterations.
    const text = keepThenUpdate(20, "%buf, %buf");
    const program = new Program(parseModule(text, "t.mlir"));
    const arena = new Arena({ pool: true });
    const arg: NDArray = { type: "f32", shape: [64, 128], data: new Float32Array(64 * 128) };
    const [out] = program.func("main").invoke([arg], { arena, failures: [] }) as NDArray[];
    const data = out?.data as Float32Array;
    // Row r < 20 is written as r + 1 and doubled by each later iteration; later rows double from 5.
    for (let r = 0; r < 64; r++) expect(data[r * 128 + 3]).toBe(r < 20 ? (r + 1) * 2 ** (19 - r) : 5 * 2 ** 20);
    expect(arena.pooledBytes).toBeLessThanOrEqual(4 * 64 * 128 * 4);
  });
});
