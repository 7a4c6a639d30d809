import { describe, expect, test } from "bun:test";
import { isXlaserveError } from "@xlaserve/core";
import type { NDArray } from "../../src/array.ts";
import { type TransposeKind, fft, triangularSolve } from "../../src/kernels/heavy/index.ts";
import { expectClose, randomF64, rng } from "./helpers.ts";

/** The DFT by its definition, one axis (the last) of interleaved complex data. */
function naiveDft(data: ArrayLike<number>, n: number, inverse: boolean): Float64Array {
  const out = new Float64Array(data.length);
  const lines = data.length / (2 * n);
  for (let l = 0; l < lines; l++) {
    for (let k = 0; k < n; k++) {
      let re = 0;
      let im = 0;
      for (let t = 0; t < n; t++) {
        const angle = ((inverse ? 2 : -2) * Math.PI * k * t) / n;
        const xr = data[2 * (l * n + t)] as number;
        const xi = data[2 * (l * n + t) + 1] as number;
        re += xr * Math.cos(angle) - xi * Math.sin(angle);
        im += xr * Math.sin(angle) + xi * Math.cos(angle);
      }
      out[2 * (l * n + k)] = inverse ? re / n : re;
      out[2 * (l * n + k) + 1] = inverse ? im / n : im;
    }
  }
  return out;
}

function randomComplex(seed: number, shape: number[]): NDArray {
  const real = randomF64(rng(seed), [...shape, 2]);
  return { type: "c128", shape, data: real.data };
}

describe("fft", () => {
  test("FFT and IFFT match the DFT for power-of-two, small odd and Bluestein lengths", () => {
    for (const n of [1, 2, 8, 64, 5, 17, 33, 100, 127]) {
      const x = randomComplex(n, [3, n]);
      expectClose(fft(x, "FFT", [n]).data as Float64Array, naiveDft(x.data as Float64Array, n, false), 1e-9);
      expectClose(fft(x, "IFFT", [n]).data as Float64Array, naiveDft(x.data as Float64Array, n, true), 1e-9);
    }
  });

  test("2-d FFT is the DFT along both axes; IFFT inverts it", () => {
    const x = randomComplex(3, [2, 6, 4]);
    const both = fft(x, "FFT", [6, 4]);
    const back = fft(both, "IFFT", [6, 4]);
    expectClose(back.data as Float64Array, x.data as Float64Array, 1e-9);
    // Along the last axis first, then transpose-free check of axis 1 via the 1-d FFT of a column.
    const rows = fft(x, "FFT", [4]);
    const col: number[] = [];
    for (let i = 0; i < 6; i++)
      col.push(rows.data[2 * (i * 4 + 1)] as number, rows.data[2 * (i * 4 + 1) + 1] as number);
    const expected = naiveDft(col, 6, false);
    for (let i = 0; i < 6; i++) expect(both.data[2 * (i * 4 + 1)] as number).toBeCloseTo(expected[2 * i] as number, 9);
  });

  test("RFFT keeps n/2+1 bins in c64 for f32; IRFFT of it returns the signal", () => {
    for (const n of [8, 17, 33]) {
      const signal = new Float32Array(2 * n).map((_, i) => Math.sin(i * 0.7) + (i % 3));
      const x: NDArray = { type: "f32", shape: [2, n], data: signal };
      const spectrum = fft(x, "RFFT", [n]);
      expect(spectrum.type).toBe("c64");
      expect(spectrum.shape).toEqual([2, Math.floor(n / 2) + 1]);
      const complexSignal = Array.from(signal).flatMap((v) => [v, 0]);
      const full = naiveDft(complexSignal, n, false);
      for (let row = 0; row < 2; row++) {
        for (let k = 0; k <= n / 2; k++) {
          const got = spectrum.data[2 * (row * (Math.floor(n / 2) + 1) + k)] as number;
          expect(got).toBeCloseTo(full[2 * (row * n + k)] as number, 3);
        }
      }
      const back = fft(spectrum, "IRFFT", [n]);
      expect(back.type).toBe("f32");
      expectClose(back.data as Float32Array, signal, 1e-5);
    }
  });

  test("an empty batch axis gives an empty result; wrong lengths are typed errors", () => {
    const empty: NDArray = { type: "f64", shape: [0, 17], data: new Float64Array(0) };
    expect(fft(empty, "RFFT", [17]).shape).toEqual([0, 9]);
    let caught: unknown;
    try {
      fft(randomComplex(1, [4, 5]), "FFT", [4]);
    } catch (error) {
      caught = error;
    }
    expect(isXlaserveError(caught, "INVALID_ARGUMENT")).toBe(true);
  });
});

describe("triangular_solve", () => {
  /** op(a) for a dense square a, after zeroing the unused triangle and forcing a unit diagonal. */
  function effective(a: Float64Array, m: number, lower: boolean, unit: boolean, transpose: TransposeKind): number[][] {
    const t: number[][] = [];
    for (let i = 0; i < m; i++) {
      t.push([]);
      for (let j = 0; j < m; j++) {
        const [r, c] = transpose === "NO_TRANSPOSE" ? [i, j] : [j, i];
        let v = (lower ? c <= r : c >= r) ? (a[r * m + c] as number) : 0;
        if (r === c && unit) v = 1;
        (t[i] as number[]).push(v);
      }
    }
    return t;
  }

  test("every side / triangle / diagonal / transpose combination solves its system", () => {
    const m = 5;
    const next = rng(11);
    for (const leftSide of [true, false]) {
      for (const lower of [true, false]) {
        for (const unitDiagonal of [true, false]) {
          for (const transposeA of ["NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"] as const) {
            const a = randomF64(next, [2, m, m]);
            for (let b = 0; b < 2; b++)
              for (let i = 0; i < m; i++) (a.data as Float64Array)[b * m * m + i * m + i] = 3 + i;
            const bShape = leftSide ? [2, m, 3] : [2, 3, m];
            const rhs = randomF64(next, bShape);
            const x = triangularSolve(a, rhs, { leftSide, lower, unitDiagonal, transposeA });
            for (let batch = 0; batch < 2; batch++) {
              const t = effective((a.data as Float64Array).subarray(batch * m * m), m, lower, unitDiagonal, transposeA);
              const X = (r: number, c: number) => x.data[batch * 3 * m + r * (leftSide ? 3 : m) + c] as number;
              const B = (r: number, c: number) => rhs.data[batch * 3 * m + r * (leftSide ? 3 : m) + c] as number;
              for (let r = 0; r < (leftSide ? m : 3); r++) {
                for (let c = 0; c < (leftSide ? 3 : m); c++) {
                  let sum = 0;
                  for (let k = 0; k < m; k++)
                    sum += leftSide ? (t[r] as number[])[k]! * X(k, c) : X(r, k) * (t[k] as number[])[c]!;
                  expect(sum).toBeCloseTo(B(r, c), 10);
                }
              }
            }
          }
        }
      }
    }
  });

  test("many tiny systems (direct path) and a 130x130 system (substitution path) solve too", () => {
    for (const [batches, m] of [
      [9, 3],
      [1, 130],
    ] as const) {
      for (const leftSide of [true, false]) {
        const next = rng(m);
        const a = randomF64(next, [batches, m, m]);
        for (let b = 0; b < batches; b++)
          for (let i = 0; i < m; i++) (a.data as Float64Array)[b * m * m + i * m + i] = 4;
        const rhs = randomF64(next, leftSide ? [batches, m, 2] : [batches, 2, m]);
        const x = triangularSolve(a, rhs, { leftSide, lower: true, unitDiagonal: false, transposeA: "TRANSPOSE" });
        for (let batch = 0; batch < batches; batch++) {
          const t = effective((a.data as Float64Array).subarray(batch * m * m), m, true, false, "TRANSPOSE");
          const w = leftSide ? 2 : m;
          for (let r = 0; r < (leftSide ? m : 2); r++) {
            for (let c = 0; c < w; c++) {
              let sum = 0;
              for (let k = 0; k < m; k++) {
                sum += leftSide
                  ? (t[r] as number[])[k]! * (x.data[batch * 2 * m + k * w + c] as number)
                  : (x.data[batch * 2 * m + r * w + k] as number) * (t[k] as number[])[c]!;
              }
              expect(sum).toBeCloseTo(rhs.data[batch * 2 * m + r * w + c] as number, 9);
            }
          }
        }
      }
    }
  });

  test("complex ADJOINT conjugates a", () => {
    // a = [[2i]] lower; adjoint(a) = -2i; x * -2i = 4  =>  x = 2i
    const a: NDArray = { type: "c64", shape: [1, 1], data: new Float32Array([0, 2]) };
    const b: NDArray = { type: "c64", shape: [1, 1], data: new Float32Array([4, 0]) };
    const x = triangularSolve(a, b, { leftSide: true, lower: true, unitDiagonal: false, transposeA: "ADJOINT" });
    expect(Array.from(x.data as Float32Array)).toEqual([0, 2]);
  });

  test("a non-square a is a typed error", () => {
    let caught: unknown;
    try {
      triangularSolve(randomF64(rng(1), [2, 3]), randomF64(rng(2), [2, 2]), {
        leftSide: true,
        lower: true,
        unitDiagonal: false,
        transposeA: "NO_TRANSPOSE",
      });
    } catch (error) {
      caught = error;
    }
    expect(isXlaserveError(caught, "INVALID_ARGUMENT")).toBe(true);
  });
});
