/**
 * The small GEMM for one call shape through the WebAssembly SIMD module (simd-gemm-module.ts):
 * the same bits as the JavaScript loop compileSmallGemm generates, several times faster once k
 * or n passes a handful (the JavaScript loop spends two conversions per Math.fround, and works
 * on one column per operation). A matrix-vector layer of a small model (1x256 times 256x10) is
 * the case it is for: about 0.5 us against 2 us.
 *
 * WebAssembly reads only its own memory, so a call copies the operands in (contiguous spans:
 * one memcpy each) and C out. One instance serves every plan of this thread: calls run one at a
 * time, each laying its operands out from `scratchBase`. Below that, each kernel may keep a
 * region of its own for B (`resident`): where the caller passes B's storage version, the same
 * array at the same offset and version is not copied again. Inside a loop a layer's weights
 * are the same on every iteration, and copying them was most of a 1x16x256 product's time.
 * Where WebAssembly SIMD is missing, `simdGemmKernel` answers null and callers keep the loop.
 */
import type { GemmShape, SmallGemmKernel } from "./small-gemm-codegen.ts";
import { simdGemmModule } from "./simd-gemm-module.ts";

interface Exports {
  readonly memory: WebAssembly.Memory;
  readonly gemm32: GemmFn;
  readonly gemm64: GemmFn;
  readonly transpose32: TransposeFn;
  readonly transpose64: TransposeFn;
}

type GemmFn = (
  m: number,
  n: number,
  k: number,
  a: number,
  aRow: number,
  aCol: number,
  b: number,
  bRow: number,
  c: number,
) => void;
type TransposeFn = (src: number, rows: number, cols: number, ld: number, dst: number) => void;

interface Instance {
  readonly exports: Exports;
  /** Views of the memory, remade when it grows (growing detaches the old buffer). */
  f32: Float32Array;
  f64: Float64Array;
  /** The memory's size in bytes, kept here: reading memory.buffer costs about 40 ns a call. */
  bytes: number;
}

/** undefined: not tried yet; null: WebAssembly SIMD is not available here. */
let instance: Instance | null | undefined;
let disabled = false;

function load(): Instance | null {
  if (instance !== undefined) return instance;
  try {
    // Compiling validates: a runtime without SIMD throws a CompileError here, one without
    // WebAssembly a ReferenceError, so a separate WebAssembly.validate would only repeat it.
    const compiled = new WebAssembly.Module(simdGemmModule(1));
    const exports = new WebAssembly.Instance(compiled, {}).exports as unknown as Exports;
    const buffer = exports.memory.buffer;
    instance = { exports, f32: new Float32Array(buffer), f64: new Float64Array(buffer), bytes: buffer.byteLength };
  } catch {
    instance = null;
  }
  return instance;
}

/** Grows the memory to at least `bytes`. */
function reserve(inst: Instance, bytes: number): void {
  const have = inst.exports.memory.buffer.byteLength;
  if (bytes <= have) return;
  inst.exports.memory.grow(Math.ceil((bytes - have) / 65536));
  const buffer = inst.exports.memory.buffer;
  inst.f32 = new Float32Array(buffer);
  inst.f64 = new Float64Array(buffer);
  inst.bytes = buffer.byteLength;
}

/** Bytes below which the kernels' kept copies of B lie; calls lay their operands out from here. */
let scratchBase = 0;

/** At most this many bytes of kept B copies, over all kernels; past it, B is copied per call. */
const RESIDENT_MAX_BYTES = 16 * 1024 * 1024;

/** A byte region below scratchBase for one kernel's B, or -2 where the cap is reached. */
function residentRegion(inst: Instance, bytes: number): number {
  const at = scratchBase;
  const size = Math.ceil(bytes / 16) * 16;
  if (at + size > RESIDENT_MAX_BYTES) return -2;
  scratchBase = at + size;
  reserve(inst, scratchBase);
  return at;
}

/** Elements past B or past C that whole-vector loads and stores may touch (a vector's worth). */
const SLACK = 4;

/** Results up to this many elements are copied out by a loop. */
const COPY_LOOP_MAX = 32;

/** Offsets in elements, rounded up to a whole vector (16 bytes). */
function align(elements: number, size: number): number {
  const per = 16 / size;
  return Math.ceil(elements / per) * per;
}

/**
 * The overwrite-C GEMM for `shape` (m, n, k >= 1; strides at least the extents, as planGemm
 * checks) in WebAssembly, or null where it cannot run. The caller checks the operands' types
 * and bounds (planGemm does).
 */
export function simdGemmKernel(shape: GemmShape, f32: boolean): SmallGemmKernel | null {
  if (disabled) return null;
  const inst = load();
  if (inst === null) return null;
  const { m, n, k, lda, ldb, ldc, transA, transB } = shape;
  const size = f32 ? 4 : 8;
  // Spans of the operands as stored, and where each goes in the module's memory, in elements
  // from the scratch base.
  const aSpan = (transA ? k - 1 : m - 1) * lda + (transA ? m : k);
  const bSpan = (transB ? n - 1 : k - 1) * ldb + (transB ? k : n);
  const aAt = 0;
  const bAt = align(aAt + aSpan, size);
  // B stored transposed is packed k x n first, so a row of B is a run of columns.
  const packedAt = transB ? align(bAt + bSpan + SLACK, size) : bAt;
  const packedSpan = transB ? k * n : bSpan;
  const cAt = align(packedAt + packedSpan + SLACK, size);
  const scratchBytes = (cAt + m * n + SLACK) * size;
  const aRow = (transA ? 1 : lda) * size;
  const aCol = (transA ? lda : 1) * size;
  const bRow = (transB ? n : ldb) * size;
  const gemm = f32 ? inst.exports.gemm32 : inst.exports.gemm64;
  const transpose = f32 ? inst.exports.transpose32 : inst.exports.transpose64;
  const count = m * n;
  /** Byte offset of this kernel's kept B (packed where B is transposed); -1: none yet, -2: none to be had. */
  let resident = -1;
  let keptB: Float32Array | Float64Array | null = null;
  let keptOffset = 0;
  let keptVersion = 0;
  return (a, aOffset, b, bOffset, c, cOffset, bVersion) => {
    // First, as it moves the scratch base and may grow the memory.
    if (bVersion !== undefined && resident === -1) resident = residentRegion(inst, (packedSpan + SLACK) * size);
    const base = scratchBase / size;
    if (scratchBase + scratchBytes > inst.bytes) reserve(inst, scratchBase + scratchBytes);
    const mem = f32 ? inst.f32 : inst.f64;
    mem.set(aOffset === 0 && a.length === aSpan ? a : a.subarray(aOffset, aOffset + aSpan), base + aAt);
    let bRead = (base + packedAt) * size;
    if (bVersion !== undefined && resident >= 0) {
      bRead = resident;
      if (b !== keptB || bOffset !== keptOffset || bVersion !== keptVersion) {
        const from = bOffset === 0 && b.length === bSpan ? b : b.subarray(bOffset, bOffset + bSpan);
        if (transB) {
          mem.set(from, base + bAt);
          transpose((base + bAt) * size, n, k, ldb, resident);
        } else mem.set(from, resident / size);
        keptB = b;
        keptOffset = bOffset;
        keptVersion = bVersion;
      }
    } else {
      mem.set(bOffset === 0 && b.length === bSpan ? b : b.subarray(bOffset, bOffset + bSpan), base + bAt);
      if (transB) transpose((base + bAt) * size, n, k, ldb, (base + packedAt) * size);
    }
    const cStart = base + cAt;
    gemm(m, n, k, (base + aAt) * size, aRow, aCol, bRead, bRow, cStart * size);
    if (ldc !== n)
      for (let i = 0; i < m; i++) c.set(mem.subarray(cStart + i * n, cStart + i * n + n), cOffset + i * ldc);
    else if (count > COPY_LOOP_MAX) c.set(mem.subarray(cStart, cStart + count), cOffset);
    // A view for set() costs more than copying a few elements one by one.
    else for (let i = 0; i < count; i++) c[cOffset + i] = mem[cAt + base + i] as number;
  };
}

/** Turns the WebAssembly path off (true) or back on, for tests that compare it with the loop. */
export function setSimdGemmDisabled(off: boolean): void {
  disabled = off;
}

/** Whether planned small GEMMs run in WebAssembly here. */
export function simdGemmAvailable(): boolean {
  return !disabled && load() !== null;
}
