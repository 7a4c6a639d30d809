import { afterAll, describe, expect, test } from "bun:test";
import { parseModule } from "@xlaserve/stablehlo";
import type { NDArray } from "../src/array.ts";
import { expXlaF32, logisticXlaF32, tanhXlaF32 } from "../src/elem/xla-f32-math.ts";
import { Arena } from "../src/plan/arena.ts";
import { fusedSimdRuns, setFusedSimdDisabled } from "../src/plan/fused-simd.ts";
import { Program } from "../src/plan/program.ts";
import fixture from "./fixtures/xla-unary-bits.json";

/**
 * tanh, exp and logistic against XLA CPU's own result bits (JAX 0.10.2, written by
 * tools/xla_unary_bits.py fixture): special values, the neighbourhoods of every clamp and
 * threshold, random values at several scales, and for bf16 / f16 every 29th pattern. The scalar
 * functions, the fused WebAssembly loop, the fused JavaScript loop and the unfused kernels must
 * all give exactly those bits (NaN as any NaN).
 */
type Op = "tanh" | "exponential" | "logistic";
type Type = "f32" | "bf16" | "f16";
const OPS: Op[] = ["tanh", "exponential", "logistic"];
const TYPES: Type[] = ["f32", "bf16", "f16"];
const SCALAR: Record<Op, (x: number) => number> = {
  tanh: tanhXlaF32,
  exponential: expXlaF32,
  logistic: logisticXlaF32,
};

function unpack(base64: string, t: Type): Uint32Array | Uint16Array {
  const raw = Buffer.from(base64, "base64");
  const bytes = new Uint8Array(raw.byteLength);
  bytes.set(raw);
  return t === "f32" ? new Uint32Array(bytes.buffer) : new Uint16Array(bytes.buffer);
}

const inputs = (t: Type) => unpack((fixture.inputs as Record<string, string>)[t] as string, t);
const outputs = (op: Op, t: Type) => unpack((fixture.outputs as Record<string, string>)[`${op}/${t}`] as string, t);

const isNaNBits = (bits: number, t: Type) =>
  t === "f32" ? (bits & 0x7fffffff) > 0x7f800000 : t === "bf16" ? (bits & 0x7fff) > 0x7f80 : (bits & 0x7fff) > 0x7c00;

/** Indices where `got` differs from XLA's bits (a NaN matches any NaN). */
function mismatches(got: ArrayLike<number>, want: ArrayLike<number>, t: Type): number[] {
  const bad: number[] = [];
  for (let i = 0; i < want.length; i++) {
    const g = got[i] as number;
    const w = want[i] as number;
    if (g !== w && !(isNaNBits(g, t) && isNaNBits(w, t))) bad.push(i);
  }
  return bad;
}

function run(op: Op, t: Type, data: Uint32Array | Uint16Array, fuse: boolean, simd: boolean): number[] {
  const n = data.length;
  // A multiply by one ahead of the function gives the fuser a chain to fuse (one op alone
  // runs as a plain kernel).
  const T = `tensor<${n}x${t}>`;
  const text = `func.func @main(%x: ${T}) -> ${T} {
    %one = stablehlo.constant dense<1.0> : ${T}
    %0 = stablehlo.multiply %x, %one : ${T}
    %1 = stablehlo.${op} %0 : ${T}
    return %1 : ${T}
  }`;
  setFusedSimdDisabled(!simd);
  const x: NDArray =
    t === "f32"
      ? { type: t, shape: [n], data: new Float32Array(data.buffer.slice(0)) }
      : { type: t, shape: [n], data: new Uint16Array(data) };
  const f = new Program(parseModule(text), { fuse }).func("main");
  const out = (f.invoke([x], { arena: new Arena({ pool: true }), failures: [] }) as NDArray[])[0] as NDArray;
  const d = out.data as Float32Array | Uint16Array;
  return Array.from(d instanceof Float32Array ? new Uint32Array(d.buffer, d.byteOffset, d.length) : d);
}

describe("XLA CPU's tanh, exp and logistic bits", () => {
  afterAll(() => setFusedSimdDisabled(false));

  test("the fixture was written by the JAX the anchors use and covers every case", () => {
    expect(fixture.jax).toBe("0.10.2");
    expect(inputs("f32").length).toBeGreaterThan(2000);
    for (const op of OPS) for (const t of TYPES) expect(outputs(op, t).length).toBe(inputs(t).length);
  });

  for (const op of OPS) {
    test(`${op}: the scalar function gives XLA's f32 bits`, () => {
      const x = new Float32Array(inputs("f32").buffer.slice(0));
      const got = new Float32Array(x.length).map((_, i) => SCALAR[op](x[i] as number));
      expect(mismatches(new Uint32Array(got.buffer), outputs(op, "f32"), "f32")).toEqual([]);
    });

    for (const t of TYPES) {
      test(`${op} on ${t}: the SIMD loop, the JavaScript loop and the plain kernel give XLA's bits`, () => {
        const want = outputs(op, t);
        const before = fusedSimdRuns();
        const simd = run(op, t, inputs(t), true, true);
        expect(fusedSimdRuns()).toBeGreaterThan(before);
        expect(mismatches(simd, want, t)).toEqual([]);
        expect(mismatches(run(op, t, inputs(t), true, false), want, t)).toEqual([]);
        expect(mismatches(run(op, t, inputs(t), false, false), want, t)).toEqual([]);
      });
    }
  }
});
