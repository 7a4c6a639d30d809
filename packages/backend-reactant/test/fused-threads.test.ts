import { afterAll, describe, expect, test } from "bun:test";
import { parseModule } from "@xlaserve/stablehlo";
import type { NDArray } from "../src/array.ts";
import { setEngineThreads, engineThreads } from "../src/parallel/threads.ts";
import { Arena } from "../src/plan/arena.ts";
import {
  closeFusedSimdPool,
  fusedSimdPoolThreads,
  fusedSimdRuns,
  fusedSimdThreadedRuns,
  setFusedSimdDisabled,
  setFusedSimdGoverned,
} from "../src/plan/fused-simd.ts";
import { SplitGovernor } from "../src/parallel/split-governor.ts";
import { WasmPool } from "../src/parallel/wasm-pool.ts";
import { I32, name, op, section, vec } from "../src/blas/wasm-encode.ts";
import { type SplitLayout, splitCall } from "../src/plan/fused-simd-split.ts";
import { Program } from "../src/plan/program.ts";
import { randomBits } from "./helpers/random-bits.ts";
import { slicedTree } from "./helpers/fused-trees.ts";

/**
 * Fused SIMD trees split over the wasm pool's threads give the bytes of one thread: every leaf
 * class (dense, row, column, scalar, slice rows), the functions applied between modules, the
 * three float types, row counts that do not divide by the thread count, rows shorter than a
 * vector and rows ending mid-vector. A share writing outside its rows, or a pointer moved by
 * the wrong amount, changes bytes of the neighbouring share.
 */
const WIDE: Record<string, string> = { f32: "f16", bf16: "f32", f16: "bf16" };

/** Row, column and scalar leaves (split by rows), transcendental ops, a round trip through a wider type. */
function rowsTree(t: string, rows: number, cols: number): string {
  const T = `tensor<${rows}x${cols}x${t}>`;
  const W = `tensor<${rows}x${cols}x${WIDE[t]}>`;
  return `func.func @main(%x: ${T}, %y: ${T}, %r: tensor<${cols}x${t}>, %c: tensor<${rows}x${t}>, %s: tensor<${t}>) -> ${T} {
    %rb = stablehlo.broadcast_in_dim %r, dims = [1] : (tensor<${cols}x${t}>) -> ${T}
    %cb = stablehlo.broadcast_in_dim %c, dims = [0] : (tensor<${rows}x${t}>) -> ${T}
    %sb = stablehlo.broadcast_in_dim %s, dims = [] : (tensor<${t}>) -> ${T}
    %0 = stablehlo.multiply %x, %rb : ${T}
    %1 = stablehlo.add %0, %cb : ${T}
    %2 = stablehlo.subtract %1, %sb : ${T}
    %3 = stablehlo.tanh %2 : ${T}
    %4 = stablehlo.logistic %y : ${T}
    %5 = stablehlo.divide %3, %4 : ${T}
    %6 = stablehlo.convert %5 : (${T}) -> ${W}
    %7 = stablehlo.convert %y : (${T}) -> ${W}
    %8 = stablehlo.multiply %6, %7 : ${W}
    %9 = stablehlo.convert %8 : (${W}) -> ${T}
    %10 = stablehlo.exponential %9 : ${T}
    return %10 : ${T}
  }`;
}

/** Dense leaves only (split over elements), a function between modules on dense values (log) and on a per-row one (rsqrt). */
function denseTree(t: string, rows: number, cols: number): string {
  const T = `tensor<${rows}x${cols}x${t}>`;
  const C = `tensor<${rows}x${t}>`;
  return `func.func @main(%x: ${T}, %y: ${T}, %r: tensor<${cols}x${t}>, %c: ${C}, %s: tensor<${t}>) -> ${T} {
    %0 = stablehlo.tanh %x : ${T}
    %1 = stablehlo.exponential %y : ${T}
    %2 = stablehlo.multiply %0, %1 : ${T}
    %3 = stablehlo.log %2 : ${T}
    %4 = stablehlo.logistic %3 : ${T}
    %5 = stablehlo.add %4, %x : ${T}
    %6 = stablehlo.abs %c : ${C}
    %7 = stablehlo.rsqrt %6 : ${C}
    %8 = stablehlo.broadcast_in_dim %7, dims = [0] : (${C}) -> ${T}
    %9 = stablehlo.multiply %5, %8 : ${T}
    return %9 : ${T}
  }`;
}

function inputs(t: string, rows: number, cols: number, seed: number): NDArray[] {
  return [
    { ...randomBits(t, rows * cols, seed), shape: [rows, cols] },
    { ...randomBits(t, rows * cols, seed + 100), shape: [rows, cols] },
    { ...randomBits(t, cols, seed + 200), shape: [cols] },
    { ...randomBits(t, rows, seed + 300), shape: [rows] },
    { ...randomBits(t, 1, seed + 400), shape: [] },
  ];
}

function run(text: string, args: NDArray[], threads: number): Uint8Array {
  setEngineThreads(threads);
  const f = new Program(parseModule(text), { fuse: true }).func("main");
  const out = (f.invoke(args, { arena: new Arena({ pool: true }), failures: [] }) as NDArray[])[0] as NDArray;
  return new Uint8Array(out.data.buffer, out.data.byteOffset, out.data.byteLength).slice();
}

const configured = engineThreads();

describe("fused SIMD trees on several threads", () => {
  afterAll(() => {
    setEngineThreads(configured);
    setFusedSimdDisabled(false);
    setFusedSimdGoverned(true);
  });
  setFusedSimdDisabled(false);
  // Split calls on a loaded machine can be slower than one thread: the governor would then keep
  // later calls on one thread, and these tests check that they split.
  setFusedSimdGoverned(false);
  // Rows that do not divide by 2 or 3, few rows of many elements, one row, rows shorter than a vector.
  const shapes: [number, number][] = [
    [37, 517],
    [5, 4099],
    [1, 20003],
    [6001, 3],
  ];
  for (const t of ["f32", "bf16", "f16"])
    test(`${t}: the bytes of one thread, on 2 and 3`, () => {
      for (const [rows, cols] of shapes)
        for (const tree of [rowsTree, denseTree, slicedTree]) {
          const text = tree(t, rows, cols);
          const args = inputs(t, rows, cols, rows + cols);
          const simd = fusedSimdRuns();
          const one = run(text, args, 1);
          expect(fusedSimdRuns()).toBeGreaterThan(simd);
          const split = fusedSimdThreadedRuns();
          for (const threads of [2, 3]) expect(run(text, args, threads)).toEqual(one);
          // Rows of 3 split only where every leaf is dense (over elements): not the row tree.
          if (cols >= 4 || rows === 1 || tree !== rowsTree) expect(fusedSimdThreadedRuns()).toBeGreaterThan(split);
          else expect(fusedSimdThreadedRuns()).toBe(split);
        }
    });

  test("a small tree stays on the calling thread", () => {
    closeFusedSimdPool();
    const args = inputs("f32", 16, 64, 7);
    const split = fusedSimdThreadedRuns();
    const one = run(rowsTree("f32", 16, 64), args, 1);
    expect(run(rowsTree("f32", 16, 64), args, 4)).toEqual(one);
    expect(fusedSimdThreadedRuns()).toBe(split);
    expect(fusedSimdPoolThreads()).toBe(0);
  });

  test("a closed pool starts again on the next large call", () => {
    closeFusedSimdPool();
    const args = inputs("f32", 64, 1024, 9);
    const one = run(denseTree("f32", 64, 1024), args, 1);
    expect(run(denseTree("f32", 64, 1024), args, 3)).toEqual(one);
    expect(fusedSimdPoolThreads()).toBe(2);
    closeFusedSimdPool();
  });
});

describe("the pool outside the test's thread", () => {
  const probe = new URL("./helpers/fused-threads-probe.ts", import.meta.url);
  test("in an engine Worker (threads started from a Worker)", async () => {
    const worker = new Worker(probe.href);
    const report = await new Promise<{ same: boolean; threaded: number }>((resolve, reject) => {
      worker.onmessage = (e) => resolve(e.data);
      worker.onerror = (e) => reject(e);
    });
    worker.terminate();
    expect(report).toEqual({ same: true, threaded: 1 });
  });
  test("a process whose pool started exits by itself", async () => {
    const child = Bun.spawn([process.execPath, probe.pathname], { stdout: "pipe", stderr: "pipe" });
    const timer = setTimeout(() => child.kill(), 20_000);
    const [code, out] = await Promise.all([child.exited, new Response(child.stdout).text()]);
    clearTimeout(timer);
    expect(code).toBe(0);
    expect(JSON.parse(out)).toEqual({ same: true, threaded: 1 });
  }, 30_000);
});

describe("a pool whose thread does not start", () => {
  test("returns false at once from then on, without waiting for the thread", () => {
    const memory = new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true });
    // A script that never runs the pool's loop: the thread never says it is ready.
    const idle = new URL("./helpers/random-bits.ts", import.meta.url).href;
    const pool = new WasmPool(memory, 2, { script: idle, startMs: 200 });
    let ran = 0;
    const t0 = performance.now();
    expect(pool.run(0, () => ran++, [[], []], 2)).toBe(false);
    expect(pool.usable).toBe(false);
    expect(pool.run(0, () => ran++, [[], []], 2)).toBe(false);
    expect(ran).toBe(0);
    expect(performance.now() - t0).toBeLessThan(5000);
  });
});

/** A module importing a shared memory of one page: run(addr, value, spin) stores value at addr after counting spin down. */
function storeModule(): WebAssembly.Module {
  const body = [
    0,
    ...op.block,
    ...op.loop,
    ...op.get(2),
    0x45, // i32.eqz
    ...op.brIf(1),
    ...op.get(2),
    ...op.i32(1),
    ...op.i32Sub,
    ...op.set(2),
    ...op.br(0),
    ...op.end,
    ...op.end,
    ...op.get(0),
    ...op.get(1),
    0x36,
    2,
    0, // i32.store
    ...op.end,
  ];
  const bytes = [
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    ...section(1, vec([[0x60, ...vec([[I32], [I32], [I32]]), ...vec([])]])),
    ...section(2, vec([[...name("e"), ...name("m"), 0x02, 0x03, 0x00, 1]])),
    ...section(3, vec([[0]])),
    ...section(7, vec([[...name("run"), 0x00, 0]])),
    ...section(10, vec([[body.length, ...body]])),
  ];
  return new WebAssembly.Module(new Uint8Array(bytes));
}

describe("the pool's shares", () => {
  const memory = new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true });
  const module = storeModule();
  const local = new WebAssembly.Instance(module, { e: { m: memory } }).exports.run as (...a: number[]) => void;
  const words = new Int32Array(memory.buffer);

  test("a thread computes a share while the caller computes its own", () => {
    const pool = new WasmPool(memory, 3);
    pool.governor.enabled = false;
    const id = pool.register(module);
    // The caller's share counts long enough (milliseconds) for the threads to take theirs.
    let calls = 0;
    for (let i = 1; i <= 20 && calls - pool.taken < 2; i++, calls += 2) {
      expect(
        pool.run(
          id,
          local,
          [
            [0, i, 2_000_000],
            [4, i, 0],
            [8, i, 0],
          ],
          3,
        ),
      ).toBe(true);
      expect(Array.from(words.subarray(0, 3))).toEqual([i, i, i]);
    }
    expect(calls - pool.taken).toBeGreaterThan(0);
    pool.close();
  });

  test("a share whose thread never starts it is computed by the caller", () => {
    const sleeper = new URL("./helpers/pool-sleeper.ts", import.meta.url).href;
    const pool = new WasmPool(memory, 2, { script: sleeper });
    pool.governor.enabled = false;
    const id = pool.register(module);
    for (let i = 1; i <= 3; i++) {
      expect(
        pool.run(
          id,
          local,
          [
            [0, 10 + i, 0],
            [4, 20 + i, 0],
          ],
          2,
        ),
      ).toBe(true);
      expect(Array.from(words.subarray(0, 2))).toEqual([10 + i, 20 + i]);
    }
    expect(pool.taken).toBe(3);
    pool.close();
  });
});

describe("the split governor", () => {
  test("pauses after more losses than wins, for longer while losses go on, and a win resets", () => {
    const g = new SplitGovernor();
    for (let i = 0; i < 7; i++) g.record(2, 1, 0);
    expect(g.allows(0)).toBe(true);
    g.record(1, 2, 0);
    g.record(2, 1, 0);
    expect(g.allows(0)).toBe(true);
    g.record(2, 1, 0);
    expect(g.allows(1)).toBe(false);
    expect(g.allows(250)).toBe(true);
    for (let i = 0; i < 8; i++) g.record(2, 1, 1000);
    expect(g.allows(1400)).toBe(false);
    expect(g.allows(1500)).toBe(true);
    g.record(1, 2, 2000);
    for (let i = 0; i < 8; i++) g.record(2, 1, 3000);
    expect(g.allows(3250)).toBe(true);
    g.enabled = false;
    for (let i = 0; i < 8; i++) g.record(2, 1, 4000);
    expect(g.allows(4000)).toBe(true);
  });
});

describe("splitting a module's call", () => {
  const layout: SplitLayout = { classes: ["d", "r", "c", "s", null], sizes: [2, 4, 2, 4, 4], outSize: 2 };
  const args = [10, 8, 1000, 2000, 3000, 4000, 0, 5000];
  test("by rows: each share's pointers at its first row, the rows covered once", () => {
    const shares: number[][] = [[], [], []];
    expect(splitCall(args, layout, 3, shares)).toBe(3);
    expect(shares.map((s) => s[0])).toEqual([3, 3, 4]);
    expect(shares[1]).toEqual([3, 8, 1000 + 3 * 8 * 2, 2000, 3000 + 3 * 2, 4000, 0, 5000 + 3 * 8 * 2]);
    expect(shares[2]).toEqual([4, 8, 1000 + 6 * 8 * 2, 2000, 3000 + 6 * 2, 4000, 0, 5000 + 6 * 8 * 2]);
  });
  test("one row splits over elements, its row leaves moved like dense ones", () => {
    const shares: number[][] = [[], []];
    expect(splitCall([1, 40, ...args.slice(2)], layout, 2, shares)).toBe(2);
    expect(shares[1]).toEqual([1, 20, 1000 + 20 * 2, 2000 + 20 * 4, 3000, 4000, 0, 5000 + 20 * 2]);
  });
  test("rows shorter than a vector are not split; fewer rows than threads give fewer shares", () => {
    const shares: number[][] = [[], [], [], []];
    expect(splitCall([10, 3, ...args.slice(2)], layout, 4, shares)).toBe(1);
    expect(splitCall([2, 8, ...args.slice(2)], layout, 4, shares)).toBe(2);
  });
  test("dense leaves and scalars: over elements, shares a multiple of a vector but the last", () => {
    const dense: SplitLayout = { classes: ["d", "s", "d"], sizes: [4, 4, 2], outSize: 4 };
    const shares: number[][] = [[], []];
    expect(splitCall([3, 7, 100, 200, 300, 400], dense, 2, shares)).toBe(2);
    expect(shares[0]).toEqual([1, 12, 100, 200, 300, 400]);
    expect(shares[1]).toEqual([1, 9, 100 + 12 * 4, 200, 300 + 12 * 2, 400 + 12 * 4]);
  });
});
