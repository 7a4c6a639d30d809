/**
 * A large FP32 input sent inline in the ModelInferRequest against the same tensor through
 * system shared memory, end to end: inline = the client builds the request with the bytes in
 * raw_input_contents and sends it; shared memory = the client writes the bytes into a registered
 * POSIX shared-memory region and sends a request naming it (and, as a third figure, the same
 * with the data already there, as a producer that writes its tensors into the region would).
 * Both from the data in the client's memory to the answer, taking turns, medians of `runs`;
 * every pair of answers is checked equal.
 */
import { rmSync, writeFileSync } from "node:fs";
import type { InferenceClient } from "../../packages/server/src/grpc/client.ts";
import type { BenchResult } from "../lib/results.ts";
import { median } from "../lib/stats.ts";

export interface LargeInputOptions {
  readonly client: InferenceClient;
  readonly model: string;
  readonly elements: number;
  readonly runs: number;
  readonly program: string;
}

const round3 = (x: number) => Math.round(x * 1000) / 1000;
const hex = (bytes: Uint8Array | undefined) => Buffer.from(bytes ?? new Uint8Array()).toString("hex");

export async function measureLargeInput(result: BenchResult, options: LargeInputOptions): Promise<void> {
  const { client, model, elements: n } = options;
  const data = new Float32Array(n);
  for (let i = 0; i < n; i++) data[i] = ((i * 7919) % 1000) / 1000;
  const bytes = new Uint8Array(data.buffer);
  const name = `xlaserve-bench-${process.pid}`;
  const path = `/dev/shm/${name}`;
  writeFileSync(path, new Uint8Array(bytes.byteLength));
  try {
    const region = Bun.mmap(path, { shared: true });
    await client.call("systemSharedMemoryRegister", {
      name: "bench",
      key: `/${name}`,
      offset: 0n,
      byteSize: BigInt(bytes.byteLength),
    });
    const shape = [1n, BigInt(n)];
    const inline = async () => {
      const t = performance.now();
      const r = await client.call("modelInfer", {
        modelName: model,
        inputs: [{ name: "x", datatype: "FP32", shape }],
        rawInputContents: [bytes],
      });
      return { ms: performance.now() - t, out: hex(r.rawOutputContents[0]) };
    };
    const shared = async (copy: boolean) => {
      const t = performance.now();
      if (copy) region.set(bytes);
      const r = await client.call("modelInfer", {
        modelName: model,
        inputs: [
          {
            name: "x",
            datatype: "FP32",
            shape,
            parameters: {
              shared_memory_region: { parameterChoice: { case: "stringParam", value: "bench" } },
              shared_memory_byte_size: { parameterChoice: { case: "int64Param", value: BigInt(bytes.byteLength) } },
            },
          },
        ],
      });
      return { ms: performance.now() - t, out: hex(r.rawOutputContents[0]) };
    };
    await inline();
    await shared(true);
    const inlineMs: number[] = [];
    const sharedMs: number[] = [];
    const inRegionMs: number[] = [];
    for (let i = 0; i < options.runs; i++) {
      const a = await inline();
      const s = await shared(true);
      const p = await shared(false);
      if (a.out !== s.out || a.out !== p.out) {
        throw new Error(`inline and shared-memory answers differ: ${a.out} vs ${s.out} vs ${p.out}`);
      }
      inlineMs.push(a.ms);
      sharedMs.push(s.ms);
      inRegionMs.push(p.ms);
    }
    result.figure("large", {
      program: options.program,
      inputBytes: bytes.byteLength,
      runs: options.runs,
      inlineMs: inlineMs.map(round3),
      sharedMemoryMs: sharedMs.map(round3),
      inRegionMs: inRegionMs.map(round3),
      inlineMedianMs: round3(median(inlineMs)),
      sharedMemoryMedianMs: round3(median(sharedMs)),
      inRegionMedianMs: round3(median(inRegionMs)),
    });
    const mib = Math.round(bytes.byteLength / 2 ** 20);
    console.log(
      `  ${bytes.byteLength} B input: inline ${round3(median(inlineMs))} ms, shared memory ${round3(median(sharedMs))} ms`,
    );
    result.ratio(
      "large_input_shared_memory_speedup",
      { label: `inline ${mib} MiB ModelInfer ms (median)`, value: median(inlineMs) },
      {
        label: "shared-memory ModelInfer ms incl. the client's copy into the region (median)",
        value: median(sharedMs),
      },
      ">= 5",
    );
    result.ratio(
      "large_input_in_region_speedup",
      { label: "inline ModelInfer ms (median)", value: median(inlineMs) },
      { label: "shared-memory ModelInfer ms, the data already in the region (median)", value: median(inRegionMs) },
    );
    await client.call("systemSharedMemoryUnregister", { name: "bench" });
  } finally {
    rmSync(path, { force: true });
  }
}
