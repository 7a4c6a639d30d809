/**
 * stablehlo.fft over the trailing fft_length.length axes, computed in f64 and stored in the
 * result's precision. FFT / IFFT are complex to complex (IFFT scaled by 1/N); RFFT keeps the
 * n/2+1 non-negative frequencies of the last axis; IRFFT rebuilds the last axis's Hermitian
 * spectrum from its n/2+1 inputs (imaginary parts of DC and Nyquist ignored, as pocketfft does).
 */
import { type ElemType, type NDArray, elementCount, isComplexType, strides } from "../../array.ts";
import { toFloat64 } from "./element-io.ts";
import { invalid, unsupported } from "./errors.ts";
import { fft1d } from "./fft-1d.ts";

export type FftType = "FFT" | "IFFT" | "RFFT" | "IRFFT";

const OP = "fft";

interface Complex {
  shape: number[];
  re: Float64Array;
  im: Float64Array;
}

/** fft(operand, fftType, fftLength): NDArray. */
export function fft(operand: NDArray, fftType: FftType, fftLength: readonly number[]): NDArray {
  const rank = operand.shape.length;
  const L = fftLength.length;
  if (L < 1 || L > 3 || L > rank)
    throw invalid(OP, `fft_length must have 1 to 3 entries, at most the rank ${rank}`, { fftLength });
  const trailing = operand.shape.slice(rank - L);
  const lastAxis = rank - 1;
  const n = fftLength[L - 1] as number;
  const complexIn = isComplexType(operand.type);
  if ((fftType === "RFFT") === complexIn) throw invalid(OP, `${fftType} does not take ${operand.type} operands`);
  if (fftType !== "RFFT" && !complexIn) throw invalid(OP, `${fftType} needs a complex operand`);
  const wide = operand.type === "f64" || operand.type === "c128";
  const outType: ElemType = fftType === "IRFFT" ? (wide ? "f64" : "f32") : wide ? "c128" : "c64";
  const expectLast = fftType === "IRFFT" ? Math.floor(n / 2) + 1 : n;
  for (let i = 0; i < L - 1; i++) {
    if (trailing[i] !== fftLength[i])
      throw invalid(OP, `axis ${rank - L + i} has size ${trailing[i]}, fft_length says ${fftLength[i]}`);
  }
  if (trailing[L - 1] !== expectLast)
    throw invalid(OP, `last axis has size ${trailing[L - 1]}, ${fftType} of length ${n} needs ${expectLast}`);

  const data = split(operand);
  const axes = [...Array(L).keys()].map((i) => rank - L + i);
  let result: Complex;
  if (fftType === "FFT" || fftType === "IFFT") {
    for (const axis of axes) transformAxis(data, axis, fftType === "IFFT");
    result = data;
  } else if (fftType === "RFFT") {
    for (const axis of axes) transformAxis(data, axis, false);
    result = resizeAxis(data, lastAxis, Math.floor(n / 2) + 1, false);
  } else {
    for (const axis of axes.slice(0, -1)) transformAxis(data, axis, true);
    result = resizeAxis(data, lastAxis, n, true);
    transformAxis(result, lastAxis, true);
  }
  return join(result, outType);
}

function split(operand: NDArray): Complex {
  const count = elementCount(operand.shape);
  if (operand.type.startsWith("f8")) throw unsupported(OP, `element type ${operand.type}`);
  const re = new Float64Array(count);
  const im = new Float64Array(count);
  if (isComplexType(operand.type)) {
    for (let i = 0; i < count; i++) {
      re[i] = operand.data[2 * i] as number;
      im[i] = operand.data[2 * i + 1] as number;
    }
  } else re.set(toFloat64(operand, OP));
  return { shape: [...operand.shape], re, im };
}

function join(c: Complex, type: ElemType): NDArray {
  const count = c.re.length;
  if (type === "f32" || type === "f64") {
    const data = type === "f32" ? new Float32Array(count) : new Float64Array(count);
    data.set(c.re);
    return { type, shape: c.shape, data };
  }
  const data = type === "c64" ? new Float32Array(2 * count) : new Float64Array(2 * count);
  for (let i = 0; i < count; i++) {
    data[2 * i] = c.re[i] as number;
    data[2 * i + 1] = c.im[i] as number;
  }
  return { type, shape: c.shape, data };
}

/** Runs the 1-D transform on every line along `axis`; inverse also scales by 1/length. */
function transformAxis(c: Complex, axis: number, inverse: boolean): void {
  const length = c.shape[axis] as number;
  const total = c.re.length;
  if (length === 0 || total === 0) return;
  const stride = strides(c.shape)[axis] as number;
  const plan = fft1d(length);
  const lineRe = new Float64Array(length);
  const lineIm = new Float64Array(length);
  const scale = inverse ? 1 / length : 1;
  for (let line = 0; line < total / length; line++) {
    const base = Math.floor(line / stride) * length * stride + (line % stride);
    for (let i = 0; i < length; i++) {
      lineRe[i] = c.re[base + i * stride] as number;
      lineIm[i] = c.im[base + i * stride] as number;
    }
    plan.run(lineRe, lineIm, inverse);
    for (let i = 0; i < length; i++) {
      c.re[base + i * stride] = (lineRe[i] as number) * scale;
      c.im[base + i * stride] = (lineIm[i] as number) * scale;
    }
  }
}

/**
 * A copy with `axis` resized to `size`: truncation (RFFT), or with `hermitian`, extension of
 * the half spectrum by X[size-k] = conj(X[k]) (IRFFT).
 */
function resizeAxis(c: Complex, axis: number, size: number, hermitian: boolean): Complex {
  const shape = [...c.shape];
  const oldSize = shape[axis] as number;
  shape[axis] = size;
  const inner = strides(c.shape)[axis] as number;
  const outer = elementCount(c.shape.slice(0, axis));
  const count = elementCount(shape);
  const re = new Float64Array(count);
  const im = new Float64Array(count);
  for (let o = 0; o < outer; o++) {
    for (let k = 0; k < size; k++) {
      const mirrored = hermitian && k >= oldSize;
      const from = mirrored ? size - k : k;
      if (from >= oldSize) continue;
      for (let i = 0; i < inner; i++) {
        const src = (o * oldSize + from) * inner + i;
        const dst = (o * size + k) * inner + i;
        re[dst] = c.re[src] as number;
        im[dst] = mirrored ? -(c.im[src] as number) : (c.im[src] as number);
      }
    }
  }
  return { shape, re, im };
}
