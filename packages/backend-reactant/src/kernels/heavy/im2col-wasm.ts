/**
 * The float 2-d im2col through the WebAssembly module (im2col-wasm-module.ts), its rows left in
 * the module's memory for the GEMM to read in place: one copy of the input in (a memcpy, or the
 * widening a narrow float needs anyway) instead of one JavaScript operation per im2col element.
 * The rows are exactly im2col2d's, so the GEMM sees the same operands and gives the same bits.
 * One instance per thread: a convolution fills and multiplies one chunk at a time and keeps
 * nothing in the memory between calls.
 */
import type { ConvGeometry } from "./conv-attributes.ts";
import { im2colModule } from "./im2col-wasm-module.ts";
import { MAX_MODULE_BYTES, SLACK, align64, lazyInstance, reserve } from "./wasm-memory.ts";

type Im2colFn = (
  src: number,
  dst: number,
  rowStart: number,
  rowEnd: number,
  outW: number,
  kH: number,
  kW: number,
  pixelBytes: number,
  runBytes: number,
  lineBytes: number,
  rowTable: number,
  colTable: number,
  contiguous: number,
) => void;

type ConvertFn = (src: number, dst: number, n: number) => void;

interface Exports {
  readonly memory: WebAssembly.Memory;
  readonly im2col: Im2colFn;
  readonly widenBf16: ConvertFn;
  readonly narrowBf16: ConvertFn;
  readonly widenF16: ConvertFn;
  readonly narrowF16: ConvertFn;
}

const load = lazyInstance<Exports>(() => im2colModule(1));

/** A convolution's input and im2col rows in the module's memory. */
export interface Im2colWorkspace {
  /** Input laid out as canonical [N, H, W, C], filled by the caller before `fill`. */
  readonly input: Float32Array | Float64Array;
  /** Rows of the last `fill`, `depth` elements each, from element 0. */
  readonly col: Float32Array | Float64Array;
  /** The f32 result region (`outputElements` of them), empty when none was asked for. */
  readonly output: Float32Array;
  /**
   * im2col rows [rowStart, rowEnd) of one batch image and channel block into `col` from its row
   * `colRow` (0 when omitted) on.
   */
  fill(
    batchIndex: number,
    channelOffset: number,
    channelCount: number,
    rowStart: number,
    rowEnd: number,
    colRow?: number,
  ): void;
  /** `input` from bf16 bits (exact). */
  widenBf16(bits: Uint16Array): void;
  /** `output` rounded to bf16 bits into `dst` (nearest even; a NaN kept quiet with its sign). */
  narrowBf16(dst: Uint16Array): void;
  /** `input` from f16 bits (exact). */
  widenF16(bits: Uint16Array): void;
  /** `output` rounded to f16 bits into `dst` (nearest even, overflow to infinity, NaN 0x7e00). */
  narrowF16(dst: Uint16Array): void;
}

/**
 * A workspace for a 2-d convolution with `inputElements` input elements, up to `rows` im2col
 * rows of `depth` at a time and, for an f32 workspace, `outputElements` of f32 results, or null
 * where the module is unavailable or would grow too large.
 */
export function im2colWorkspace(
  g: ConvGeometry,
  tables: Int32Array[],
  f64: boolean,
  inputElements: number,
  rows: number,
  depth: number,
  outputElements = 0,
): Im2colWorkspace | null {
  if (g.spatialRank !== 2) return null;
  const size = f64 ? 8 : 4;
  const rowTable = tables[0] as Int32Array;
  const colTable = tables[1] as Int32Array;
  const rowAt = 0;
  const colAt = align64(rowTable.byteLength);
  const inputAt = colAt + align64(colTable.byteLength);
  const colRegionAt = inputAt + align64(inputElements * size + SLACK);
  const outputAt = colRegionAt + align64(rows * depth * size + SLACK);
  const outputs = f64 ? 0 : outputElements;
  const halfAt = outputAt + align64(outputs * 4 + SLACK);
  const total = halfAt + align64(2 * Math.max(inputElements, outputs) + SLACK);
  if (total > MAX_MODULE_BYTES) return null;
  const ex = load();
  if (!ex) return null;
  const buffer = reserve(ex.memory, total);
  new Int32Array(buffer, rowAt, rowTable.length).set(rowTable);
  new Int32Array(buffer, colAt, colTable.length).set(colTable);
  const Float = f64 ? Float64Array : Float32Array;
  const input = new Float(buffer, inputAt, inputElements);
  const col = new Float(buffer, colRegionAt, rows * depth);
  const output = new Float32Array(buffer, outputAt, outputs);
  const [inH, inW] = g.inSpatial as [number, number];
  const outW = g.outSpatial[1] as number;
  const [kH, kW] = g.kernelSpatial as [number, number];
  const C = g.inChannels;
  const im2col = ex.im2col;
  /** 16-bit input bits copied in, then widened to f32 into `input`. */
  const widen = (convert: ConvertFn, bits: Uint16Array) => {
    new Uint16Array(buffer, halfAt, bits.length).set(bits);
    convert(halfAt, inputAt, bits.length);
  };
  /** `output` narrowed to 16-bit bits, then copied out to `dst`. */
  const narrow = (convert: ConvertFn, dst: Uint16Array) => {
    convert(outputAt, halfAt, dst.length);
    dst.set(new Uint16Array(buffer, halfAt, dst.length));
  };
  return {
    input,
    col,
    output,
    widenBf16: (bits) => widen(ex.widenBf16, bits),
    narrowBf16: (dst) => narrow(ex.narrowBf16, dst),
    widenF16: (bits) => widen(ex.widenF16, bits),
    narrowF16: (dst) => narrow(ex.narrowF16, dst),
    fill(batchIndex, channelOffset, channelCount, rowStart, rowEnd, colRow = 0) {
      const contiguous = channelCount === C && g.rhsDilation[1] === 1 && g.lhsDilation[1] === 1 ? 1 : 0;
      const src = inputAt + (batchIndex * inH * inW * C + channelOffset) * size;
      im2col(
        src,
        colRegionAt + colRow * depth * size,
        rowStart,
        rowEnd,
        outW,
        kH,
        kW,
        C * size,
        channelCount * size,
        inW * C * size,
        rowAt,
        colAt,
        contiguous,
      );
    },
  };
}
