/**
 * Runs one large fused tree on 1 and 2 threads and reports whether the bytes matched and the
 * pool was used: posted back when loaded as a Worker, printed as JSON when run as a script
 * (which must then exit by itself, the pool's threads still started).
 */
import { parseModule } from "@xlaserve/stablehlo";
import type { NDArray } from "../../src/array.ts";
import { setEngineThreads } from "../../src/parallel/threads.ts";
import { Arena } from "../../src/plan/arena.ts";
import { fusedSimdThreadedRuns } from "../../src/plan/fused-simd.ts";
import { Program } from "../../src/plan/program.ts";
import { randomBits } from "./random-bits.ts";

const T = "tensor<64x1024xf32>";
const text = `func.func @main(%x: ${T}, %y: ${T}) -> ${T} {
  %0 = stablehlo.tanh %x : ${T}
  %1 = stablehlo.multiply %0, %y : ${T}
  %2 = stablehlo.exponential %1 : ${T}
  return %2 : ${T}
}`;
const args: NDArray[] = [
  { ...randomBits("f32", 65536, 1), shape: [64, 1024] },
  { ...randomBits("f32", 65536, 2), shape: [64, 1024] },
];

function bytesOn(threads: number): number[] {
  setEngineThreads(threads);
  const f = new Program(parseModule(text), { fuse: true }).func("main");
  const out = (f.invoke(args, { arena: new Arena(), failures: [] }) as NDArray[])[0] as NDArray;
  return Array.from(new Uint8Array(out.data.buffer, out.data.byteOffset, out.data.byteLength));
}

const one = bytesOn(1);
const two = bytesOn(2);
const report = { same: one.every((b, i) => b === two[i]), threaded: fusedSimdThreadedRuns() };
declare const self: Worker;
if (typeof Bun.isMainThread === "boolean" && !Bun.isMainThread) self.postMessage(report);
else console.log(JSON.stringify(report));
