/**
 * Micro-benchmark of the CPU engine's GEMM-backed kernels: a 256^3 sgemm through OpenBLAS and
 * through the TypeScript fallback, and a ResNet-50 3x3 convolution layer (1x56x56x64 -> 64,
 * NHWC / HWIO, pad 1) through im2col + GEMM against a direct seven-loop convolution.
 *
 *   bun bench/cpu-kernels.bench.ts
 */
import type { NDArray } from "../packages/backend-reactant/src/array.ts";
import { blasStatus, gemm, setForceFallbackGemm } from "../packages/backend-reactant/src/blas/index.ts";
import { type ConvAttributes, convolution } from "../packages/backend-reactant/src/kernels/heavy/index.ts";
import { NHWC_HWIO, symmetricPadding2d } from "../packages/backend-reactant/test/heavy/conv-layouts.ts";

function random(n: number): Float32Array {
  const out = new Float32Array(new ArrayBuffer(n * 4));
  let seed = 12345;
  for (let i = 0; i < n; i++) {
    seed = (seed * 1103515245 + 12345) >>> 0;
    out[i] = seed / 4294967296 - 0.5;
  }
  return out;
}

/** Median seconds per call over `runs` timed calls after one warm-up. */
function time(runs: number, fn: () => void): number {
  fn();
  const samples: number[] = [];
  for (let r = 0; r < runs; r++) {
    const start = performance.now();
    fn();
    samples.push((performance.now() - start) / 1000);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)] as number;
}

function report(name: string, flops: number, seconds: number): void {
  console.log(
    `${name.padEnd(44)} ${(seconds * 1000).toFixed(2).padStart(9)} ms  ${(flops / seconds / 1e9).toFixed(2).padStart(7)} GFLOP/s`,
  );
}

const n = 256;
const a = random(n * n);
const b = random(n * n);
const c = new Float32Array(new ArrayBuffer(n * n * 4));
const sgemm = () =>
  gemm({
    m: n,
    n,
    k: n,
    a,
    aOffset: 0,
    lda: n,
    transA: false,
    b,
    bOffset: 0,
    ldb: n,
    transB: false,
    c,
    cOffset: 0,
    ldc: n,
    accumulate: false,
  });
const status = blasStatus();
console.log(`BLAS: ${status.library ?? "none (TypeScript fallback)"}, threads ${status.threads}`);
report(`sgemm ${n}x${n}x${n} (${status.library ? "OpenBLAS" : "fallback"})`, 2 * n ** 3, time(20, sgemm));
setForceFallbackGemm(true);
report(`sgemm ${n}x${n}x${n} (TypeScript fallback)`, 2 * n ** 3, time(5, sgemm));
setForceFallbackGemm(false);

// ResNet-50 stage-2 3x3 convolution.
const [H, W, C, O] = [56, 56, 64, 64];
const input: NDArray = { type: "f32", shape: [1, H, W, C], data: random(H * W * C) };
const kernel: NDArray = { type: "f32", shape: [3, 3, C, O], data: random(9 * C * O) };
const attrs: ConvAttributes = { dims: NHWC_HWIO, padding: symmetricPadding2d(1) };
const convFlops = 2 * H * W * O * 9 * C;

/** The direct definition: every output, every tap, every input channel. */
function naiveConv(): Float32Array {
  const x = input.data as Float32Array;
  const k = kernel.data as Float32Array;
  const out = new Float32Array(H * W * O);
  for (let y = 0; y < H; y++)
    for (let xo = 0; xo < W; xo++)
      for (let o = 0; o < O; o++) {
        let sum = 0;
        for (let ky = 0; ky < 3; ky++)
          for (let kx = 0; kx < 3; kx++) {
            const iy = y + ky - 1;
            const ix = xo + kx - 1;
            if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
            for (let ci = 0; ci < C; ci++)
              sum += (x[(iy * W + ix) * C + ci] as number) * (k[((ky * 3 + kx) * C + ci) * O + o] as number);
          }
        out[(y * W + xo) * O + o] = sum;
      }
  return out;
}

report(
  "conv 1x56x56x64 3x3 -> 64 (im2col + GEMM)",
  convFlops,
  time(10, () => convolution(input, kernel, attrs)),
);
setForceFallbackGemm(true);
report(
  "conv 1x56x56x64 3x3 -> 64 (im2col + TS GEMM)",
  convFlops,
  time(3, () => convolution(input, kernel, attrs)),
);
setForceFallbackGemm(false);
report("conv 1x56x56x64 3x3 -> 64 (naive loops)", convFlops, time(2, naiveConv));

// The ResNet-50 stem: 7x7 stride 2 on a 224x224 RGB image.
const stemInput: NDArray = { type: "f32", shape: [1, 224, 224, 3], data: random(224 * 224 * 3) };
const stemKernel: NDArray = { type: "f32", shape: [7, 7, 3, 64], data: random(49 * 3 * 64) };
const stemAttrs: ConvAttributes = {
  ...attrs,
  windowStrides: [2, 2],
  padding: symmetricPadding2d(3),
};
report(
  "conv 1x224x224x3 7x7/2 -> 64 (im2col + GEMM)",
  2 * 112 * 112 * 64 * 147,
  time(10, () => convolution(stemInput, stemKernel, stemAttrs)),
);

/** Every convolution of ResNet-50 v1.5 at batch 1 (NHWC / HWIO), with its repeat count. */
function resnet50Convs(): { h: number; cin: number; cout: number; k: number; stride: number; repeat: number }[] {
  const layers = [{ h: 224, cin: 3, cout: 64, k: 7, stride: 2, repeat: 1 }];
  const stages = [
    { h: 56, width: 64, blocks: 3, inFirst: 64, stride: 1 },
    { h: 56, width: 128, blocks: 4, inFirst: 256, stride: 2 },
    { h: 28, width: 256, blocks: 6, inFirst: 512, stride: 2 },
    { h: 14, width: 512, blocks: 3, inFirst: 1024, stride: 2 },
  ];
  for (const s of stages) {
    const out = s.width * 4;
    const hOut = s.h / s.stride;
    // First block: 1x1 reduce, strided 3x3, 1x1 expand, strided 1x1 projection.
    layers.push({ h: s.h, cin: s.inFirst, cout: s.width, k: 1, stride: 1, repeat: 1 });
    layers.push({ h: s.h, cin: s.width, cout: s.width, k: 3, stride: s.stride, repeat: 1 });
    layers.push({ h: hOut, cin: s.width, cout: out, k: 1, stride: 1, repeat: 1 });
    layers.push({ h: s.h, cin: s.inFirst, cout: out, k: 1, stride: s.stride, repeat: 1 });
    // The other blocks.
    layers.push({ h: hOut, cin: out, cout: s.width, k: 1, stride: 1, repeat: s.blocks - 1 });
    layers.push({ h: hOut, cin: s.width, cout: s.width, k: 3, stride: 1, repeat: s.blocks - 1 });
    layers.push({ h: hOut, cin: s.width, cout: out, k: 1, stride: 1, repeat: s.blocks - 1 });
  }
  return layers;
}

let totalSeconds = 0;
let totalFlops = 0;
for (const layer of resnet50Convs()) {
  const pad = Math.floor(layer.k / 2);
  const x: NDArray = {
    type: "f32",
    shape: [1, layer.h, layer.h, layer.cin],
    data: random(layer.h * layer.h * layer.cin),
  };
  const w: NDArray = {
    type: "f32",
    shape: [layer.k, layer.k, layer.cin, layer.cout],
    data: random(layer.k * layer.k * layer.cin * layer.cout),
  };
  const layerAttrs: ConvAttributes = {
    ...attrs,
    windowStrides: [layer.stride, layer.stride],
    padding: symmetricPadding2d(pad),
  };
  const seconds = time(3, () => convolution(x, w, layerAttrs));
  const hOut = Math.ceil(layer.h / layer.stride);
  totalSeconds += seconds * layer.repeat;
  totalFlops += 2 * hOut * hOut * layer.cout * layer.k * layer.k * layer.cin * layer.repeat;
}
report("ResNet-50 all 53 convolutions, batch 1", totalFlops, totalSeconds);
