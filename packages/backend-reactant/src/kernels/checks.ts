import { type NDArray, elementCount, isComplexType, isFloatType, strides } from "../array.ts";
import { readScalar } from "../elem/scalar.ts";

/**
 * The conformance checks (check.expect_eq / expect_close / expect_almost_eq custom calls and
 * the check dialect's *_const forms), with the reference interpreter's meaning. Each returns
 * null when the check holds, else a message naming the first mismatching element.
 */

export type CheckKind = "eq" | "close" | "almost_eq";

export interface CheckOptions {
  readonly maxUlp?: number;
  readonly tolerance?: number;
}

export function runCheck(
  kind: CheckKind,
  actual: NDArray,
  expected: NDArray,
  options: CheckOptions = {},
): string | null {
  if (actual.shape.length !== expected.shape.length || actual.shape.some((d, i) => d !== expected.shape[i])) {
    return `shape [${actual.shape}] differs from expected [${expected.shape}]`;
  }
  if (actual.type !== expected.type) return `element type ${actual.type} differs from expected ${expected.type}`;
  const n = elementCount(actual.shape);
  const complex = isComplexType(actual.type);
  const float = isFloatType(actual.type) || complex;
  const maxUlp = options.maxUlp ?? 3;
  const tolerance = options.tolerance ?? 1e-3;
  const ulps = float && kind === "close" ? ulpDistances(actual, expected) : null;
  for (let i = 0; i < n; i++) {
    const a = readScalar(actual, i);
    const e = readScalar(expected, i);
    let ok: boolean;
    if (!float) ok = a === e;
    else if (kind === "eq") ok = complex ? sameBits(a, e) : sameFloat(a as number, e as number);
    else if (kind === "close") ok = ulps === null || (ulps[i] as number) <= maxUlp;
    else ok = complex ? almost(a, e, tolerance) : almostEqual(a as number, e as number, tolerance);
    if (!ok) return `element ${formatIndex(i, actual.shape)}: got ${show(a)}, expected ${show(e)}`;
  }
  return null;
}

function show(v: unknown): string {
  return Array.isArray(v) ? `(${v[0]}, ${v[1]})` : String(v);
}

function formatIndex(i: number, shape: number[]): string {
  const st = strides(shape);
  return `[${shape.map((d, k) => Math.floor(i / (st[k] as number)) % d).join(", ")}]`;
}

function sameFloat(a: number, e: number): boolean {
  if (Number.isNaN(a)) return Number.isNaN(e);
  return Object.is(a, e);
}

function sameBits(a: unknown, e: unknown): boolean {
  const [ar, ai] = a as [number, number];
  const [er, ei] = e as [number, number];
  return sameFloat(ar, er) && sameFloat(ai, ei);
}

function almostEqual(a: number, e: number, tolerance: number): boolean {
  if (Number.isNaN(a) || Number.isNaN(e)) return Number.isNaN(a) && Number.isNaN(e);
  if (!Number.isFinite(a) || !Number.isFinite(e)) return a === e;
  return Math.abs(a - e) <= tolerance;
}

function almost(a: unknown, e: unknown, tolerance: number): boolean {
  const [ar, ai] = a as [number, number];
  const [er, ei] = e as [number, number];
  return almostEqual(ar, er, tolerance) && almostEqual(ai, ei, tolerance);
}

/**
 * ULP distance per element in the element type's own format: non-finite values must match
 * exactly (any NaN matches any NaN), finite values differ by how many representable numbers lie
 * between them. Complex: the larger of the two parts.
 */
export function ulpDistances(actual: NDArray, expected: NDArray): Float64Array {
  const a = orderedKeys(actual);
  const e = orderedKeys(expected);
  const per = isComplexType(actual.type) ? 2 : 1;
  const out = new Float64Array(a.values.length / per);
  for (let i = 0; i < out.length; i++) {
    let worst = 0;
    for (let k = 0; k < per; k++) {
      const j = i * per + k;
      const av = a.values[j] as number;
      const ev = e.values[j] as number;
      let d: number;
      if (Number.isNaN(av) || Number.isNaN(ev)) d = Number.isNaN(av) && Number.isNaN(ev) ? 0 : Number.POSITIVE_INFINITY;
      else if (!Number.isFinite(av) || !Number.isFinite(ev)) d = av === ev ? 0 : Number.POSITIVE_INFINITY;
      else d = Math.abs(Number((a.keys[j] as bigint) - (e.keys[j] as bigint)));
      worst = Math.max(worst, d);
    }
    out[i] = worst;
  }
  return out;
}

function orderedKeys(x: NDArray): { values: number[]; keys: bigint[] } {
  const values: number[] = [];
  const keys: bigint[] = [];
  const d = x.data;
  const bits =
    x.type === "f64" || x.type === "c128"
      ? Array.from(new BigInt64Array(d.buffer, d.byteOffset, d.length))
      : x.type === "f32" || x.type === "c64"
        ? Array.from(new Int32Array(d.buffer, d.byteOffset, d.length), (v) => BigInt(v))
        : Array.from(d as Uint16Array, (v) => BigInt((v << 16) >> 16));
  const signMask =
    x.type === "f64" || x.type === "c128"
      ? 0x7fffffffffffffffn
      : x.type === "f32" || x.type === "c64"
        ? 0x7fffffffn
        : 0x7fffn;
  const n = elementCount(x.shape) * (isComplexType(x.type) ? 2 : 1);
  for (let i = 0; i < n; i++) {
    const b = bits[i] as bigint;
    keys.push(b < 0n ? -(b & signMask) : b);
    values.push(isComplexType(x.type) ? (d[i] as number) : (readScalar(x, i) as number));
  }
  return { values, keys };
}
