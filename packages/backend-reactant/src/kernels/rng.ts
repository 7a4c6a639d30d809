import { type NDArray, allocData, bitWidth, elementCount } from "../array.ts";
import type { TensorType } from "@xlaserve/stablehlo";
import { unsupported } from "./errors.ts";

/**
 * rng_bit_generator with XLA's bit layout (the spec leaves the bits implementation-defined; the
 * engine matches XLA so a model gives the same random numbers on both backends).
 * State: ui64[2] = [key, counter]; the key's two 32-bit halves key the generator and block i
 * of the output encrypts counter + i. The new state is [key, counter + blocks used].
 * THREE_FRY: Threefry-2x32, 20 rounds. PHILOX (and DEFAULT, which XLA maps to Philox):
 * Philox-4x32, 10 rounds.
 */
export function rngBitGenerator(algorithm: string, state: NDArray, output: TensorType): NDArray[] {
  if (state.type !== "ui64" && state.type !== "i64")
    throw unsupported("rng_bit_generator", `state of type ${state.type}`);
  if (state.data.length !== 2) throw unsupported("rng_bit_generator", "state must have two 64-bit words");
  const words = state.data as BigUint64Array;
  const key = BigInt.asUintN(64, words[0] as bigint);
  const counter = BigInt.asUintN(64, words[1] as bigint);
  const k0 = Number(key & 0xffffffffn);
  const k1 = Number(key >> 32n);
  const width = bitWidth(output.elem);
  if (![16, 32, 64].includes(width) || !/^u?i\d+$/.test(output.elem)) {
    throw unsupported("rng_bit_generator", `output of type ${output.elem}`);
  }
  const philox = algorithm === "PHILOX" || algorithm === "DEFAULT";
  if (!philox && algorithm !== "THREE_FRY") throw unsupported("rng_bit_generator", `algorithm ${algorithm}`);
  const n = elementCount(output.shape);
  const out = allocData(output.elem, n);
  let blocks: number;
  if (philox) blocks = philoxFill(out, n, width, k0, k1, counter);
  else if (width === 64) blocks = threeFry64(out as BigUint64Array, n, k0, k1, counter);
  else blocks = threeFry32(out, output.shape, width, k0, k1, counter);
  const newState = new BigUint64Array([key, BigInt.asUintN(64, counter + BigInt(blocks))]);
  return [
    { type: state.type, shape: [2], data: state.type === "ui64" ? newState : new BigInt64Array(newState.buffer) },
    { type: output.elem, shape: [...output.shape], data: out },
  ];
}

const ROTATIONS = [13, 15, 26, 6, 17, 29, 16, 24];

function rotl(x: number, r: number): number {
  return ((x << r) | (x >>> (32 - r))) >>> 0;
}

/** Threefry-2x32 of the 64-bit block `counter + index`: [low word, high word]. */
function threeFry(k0: number, k1: number, block: bigint, out: Uint32Array): void {
  const ks = [k0, k1, (0x1bd11bda ^ k0 ^ k1) >>> 0];
  let x0 = (Number(block & 0xffffffffn) + k0) >>> 0;
  let x1 = (Number((block >> 32n) & 0xffffffffn) + k1) >>> 0;
  for (let i = 0; i < 5; i++) {
    const rot = (4 * i) % 8;
    for (let j = 0; j < 4; j++) {
      x0 = (x0 + x1) >>> 0;
      x1 = rotl(x1, ROTATIONS[rot + j] as number);
      x1 = (x0 ^ x1) >>> 0;
    }
    x0 = (x0 + (ks[(i + 1) % 3] as number)) >>> 0;
    x1 = (x1 + (ks[(i + 2) % 3] as number) + i + 1) >>> 0;
  }
  out[0] = x0;
  out[1] = x1;
}

function threeFry64(out: BigUint64Array, n: number, k0: number, k1: number, counter: bigint): number {
  const pair = new Uint32Array(2);
  for (let i = 0; i < n; i++) {
    threeFry(k0, k1, BigInt.asUintN(64, counter + BigInt(i)), pair);
    out[i] = BigInt(pair[0] as number) | (BigInt(pair[1] as number) << 32n);
  }
  return n;
}

/**
 * 32- and 16-bit Threefry outputs: one block gives two words, laid out as XLA does: the first
 * axis of even size (else the largest) is halved, the first words fill one half and the
 * second words the other, interleaved along that axis's following position.
 */
function threeFry32(
  out: NDArray["data"],
  shape: number[],
  width: number,
  k0: number,
  k1: number,
  counter: bigint,
): number {
  const n = elementCount(shape);
  const mask = width === 16 ? 0xffff : 0xffffffff;
  const pair = new Uint32Array(2);
  if (shape.length === 0 || n === 1) {
    threeFry(k0, k1, counter, pair);
    out[0] = (pair[0] as number) & mask;
    return 1;
  }
  let half = shape.indexOf(Math.max(...shape));
  const even = shape.findIndex((d) => d % 2 === 0);
  if (even >= 0) half = even;
  const mid = [...shape];
  mid[half] = Math.ceil((mid[half] as number) / 2);
  const inner = shape.slice(half + 1).reduce((a, b) => a * b, 1); // elements after the halved axis
  const outer = shape.slice(0, half).reduce((a, b) => a * b, 1);
  const count = elementCount(mid);
  const first = new Uint32Array(count);
  const second = new Uint32Array(count);
  for (let i = 0; i < count; i++) {
    threeFry(k0, k1, BigInt.asUintN(64, counter + BigInt(i)), pair);
    first[i] = pair[0] as number;
    second[i] = pair[1] as number;
  }
  // [outer, mid[half], inner] x 2 concatenated on the axis after `half`, i.e. per (o, h):
  // inner values of `first` then inner values of `second`, forming two consecutive rows of the
  // doubled axis; then cut back to shape[half] rows.
  const rows = shape[half] as number;
  const m = mid[half] as number;
  for (let o = 0; o < outer; o++) {
    for (let h = 0; h < m; h++) {
      const src = (o * m + h) * inner;
      for (let side = 0; side < 2; side++) {
        const row = 2 * h + side;
        if (row >= rows) continue;
        const from = side === 0 ? first : second;
        const dst = (o * rows + row) * inner;
        for (let t = 0; t < inner; t++) out[dst + t] = (from[src + t] as number) & mask;
      }
    }
  }
  return count;
}

/** Philox-4x32 with XLA's initial state [counter low, counter high, key0, key1]. */
function philox(k0: number, k1: number, block: bigint, out: Uint32Array): void {
  let x0 = Number(block & 0xffffffffn);
  let x1 = Number((block >> 32n) & 0xffffffffn);
  let x2 = k0;
  let x3 = k1;
  let a = k0;
  let b = k1;
  for (let round = 0; round < 10; round++) {
    const [hi0, lo0] = mulHiLo(x0, 0xd2511f53);
    const [hi1, lo1] = mulHiLo(x2, 0xcd9e8d57);
    const n0 = (hi1 ^ x1 ^ a) >>> 0;
    const n2 = (hi0 ^ x3 ^ b) >>> 0;
    x0 = n0;
    x1 = lo1;
    x2 = n2;
    x3 = lo0;
    a = (a + 0x9e3779b9) >>> 0;
    b = (b + 0xbb67ae85) >>> 0;
  }
  out[0] = x0;
  out[1] = x1;
  out[2] = x2;
  out[3] = x3;
}

function mulHiLo(a: number, b: number): [number, number] {
  const p = BigInt(a) * BigInt(b);
  return [Number(p >> 32n), Number(p & 0xffffffffn)];
}

function philoxFill(out: NDArray["data"], n: number, width: number, k0: number, k1: number, counter: bigint): number {
  const words = new Uint32Array(4);
  if (width === 64) {
    const blocks = Math.ceil(n / 2);
    const o = out as BigUint64Array;
    for (let c = 0; c < blocks; c++) {
      philox(k0, k1, BigInt.asUintN(64, counter + BigInt(c)), words);
      const v0 = BigInt(words[0] as number) | (BigInt(words[1] as number) << 32n);
      const v1 = BigInt(words[2] as number) | (BigInt(words[3] as number) << 32n);
      if (2 * c < n) o[2 * c] = v0;
      if (2 * c + 1 < n) o[2 * c + 1] = v1;
    }
    return blocks;
  }
  const mask = width === 16 ? 0xffff : 0xffffffff;
  const blocks = Math.ceil(n / 4);
  for (let c = 0; c < blocks; c++) {
    philox(k0, k1, BigInt.asUintN(64, counter + BigInt(c)), words);
    for (let j = 0; j < 4 && 4 * c + j < n; j++) out[4 * c + j] = (words[j] as number) & mask;
  }
  return blocks;
}
