/**
 * Runs channels-last pooling through the WebAssembly module (pool-wasm-module.ts): the input
 * copied into its memory (one memcpy), pooled a vector of channels at a time, the result copied
 * out. Same keys, so the same bits, as pool-nhwc.ts's loops; those remain where WebAssembly
 * SIMD is missing, for f32 min, and for arrays past the memory cap.
 */
import { poolModule } from "./pool-wasm-module.ts";
import { MAX_MODULE_BYTES, SLACK, align64, lazyInstance, reserve } from "./wasm-memory.ts";

type PoolFn = (...args: number[]) => void;

interface Exports {
  readonly memory: WebAssembly.Memory;
  readonly pool16: PoolFn;
  readonly pool32: PoolFn;
}

const load = lazyInstance<Exports>(() => poolModule(1));

let enabled = true;

/** Turns the module off (tests compare it with the JavaScript loops). */
export function setPoolWasm(on: boolean): void {
  enabled = on;
}

/** pool-nhwc.ts's key of one 16-bit value. */
function halfKey(bits: number, infinity: number, kind: "max" | "min"): number {
  let b = bits & 0xffff;
  const magnitude = b & 0x7fff;
  if (magnitude > infinity) b = magnitude | (kind === "max" ? 0 : 0x8000);
  const s = (b << 16) >> 16;
  return s ^ ((s >> 31) & 0x7fff) ^ (kind === "max" ? 0 : -1);
}

/** pool-nhwc.ts's key of one f32 (as its int32 bits), for max. */
function f32Key(bits: number): number {
  let b = bits | 0;
  const magnitude = b & 0x7fffffff;
  if (magnitude > 0x7f800000) b = magnitude;
  return b ^ ((b >> 31) & 0x7fffffff);
}

export interface PoolShape {
  readonly N: number;
  readonly OH: number;
  readonly OW: number;
  readonly C: number;
  readonly IH: number;
  readonly IW: number;
  readonly kH: number;
  readonly kW: number;
  readonly rowTable: Int32Array;
  readonly colTable: Int32Array;
}

/**
 * Pools `input` into `out` (filled with the init value), 16-bit storage for f16 / bf16 (by
 * `infinity`, their infinity's bits) or f32 (max only); false where the module is not used.
 */
export function poolInWasm(
  s: PoolShape,
  input: Uint16Array | Float32Array,
  out: Uint16Array | Float32Array,
  kind: "max" | "min",
  infinity: number,
): boolean {
  const half = input instanceof Uint16Array;
  if (!enabled || (!half && kind !== "max")) return false;
  if (out.length === 0) return true;
  const size = half ? 2 : 4;
  const rowAt = 0;
  const colAt = align64(s.rowTable.byteLength);
  const inAt = colAt + align64(s.colTable.byteLength);
  const outAt = inAt + align64(input.byteLength + SLACK);
  const total = outAt + align64(out.byteLength + SLACK);
  if (total > MAX_MODULE_BYTES) return false;
  const ex = load();
  if (!ex) return false;
  const buffer = reserve(ex.memory, total);
  new Int32Array(buffer, rowAt, s.rowTable.length).set(s.rowTable);
  new Int32Array(buffer, colAt, s.colTable.length).set(s.colTable);
  new Uint8Array(buffer, inAt, input.byteLength).set(new Uint8Array(input.buffer, input.byteOffset, input.byteLength));
  const init = half
    ? halfKey(out[0] as number, infinity, kind)
    : f32Key(new Int32Array(out.buffer, out.byteOffset, 1)[0] as number);
  const flip = kind === "max" ? 0 : -1;
  const args = [inAt, outAt, s.N, s.OH, s.OW, s.C * size, s.IH, s.IW, s.kH, s.kW, rowAt, colAt, init, flip];
  if (half) ex.pool16(...args, infinity, kind === "max" ? 0 : 0x8000);
  else ex.pool32(...args, 0x7f800000, 0);
  new Uint8Array(out.buffer, out.byteOffset, out.byteLength).set(new Uint8Array(buffer, outAt, out.byteLength));
  return true;
}
