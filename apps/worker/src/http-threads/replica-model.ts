import type { AbstractBackend, DeviceBuffer, Executable, HostTensor, TensorSpec } from "@xlaserve/core";
import { XlaserveError } from "@xlaserve/core";
import type { InferRequest, ModelStats, ServedModel } from "@xlaserve/server/contract.ts";
import { chooseBatchSize, padAxis, sliceRange } from "../model/batch-rows.ts";
import { runSync, sameBytes } from "../inline/run-sync.ts";
import { countPart, zeroStats } from "../model/stats.ts";
import type { ReplicaSpec } from "./protocol.ts";

/**
 * A new replica's warm-up before it serves (the engine's code starts cold on a new thread: the
 * MLP's first run takes milliseconds, its hundredth tens of microseconds): WARM_RUNS runs, for at
 * most WARM_BUDGET_MS of run time, yielding to the thread's other work every SLICE_MS. Its median
 * run over the last TIMED_RUNS must be within the spec's maxRunUs; a program that does not get
 * through TIMED_RUNS runs in the budget is refused (it would hold the thread too long per request).
 * Run time, not wall time: on a busy machine a thread waits for a core between runs.
 */
const WARM_RUNS = 200;
const WARM_BUDGET_MS = 300;
const TIMED_RUNS = 64;
const SLICE_MS = 2;

/**
 * A model that runs inline, rebuilt on one of the worker's extra HTTP threads: the same engine,
 * the same serialized programs and a copy of the weights, so its answers are the engine thread's
 * bytes (checked before it serves). Each run finishes before infer() returns, as an inline run
 * on the main thread does. Its statistics go to the main thread's model (takeDelta).
 */
export class ReplicaModel implements ServedModel {
  readonly name: string;
  readonly version: string;
  readonly generation: number;
  readonly platform: string;
  readonly inputs: readonly TensorSpec[];
  readonly outputs: readonly TensorSpec[];
  readonly compiledBatchSizes: readonly number[];
  readonly maxBatchSize: number;
  private delta = zeroStats();
  private pins = 0;
  private dropped = false;
  private disposed = false;

  private constructor(
    spec: ReplicaSpec,
    private readonly engine: AbstractBackend,
    private readonly programs: ReadonlyMap<number, Executable>,
    private readonly locals: readonly Executable[],
    private readonly weights: readonly DeviceBuffer[],
  ) {
    this.name = spec.name;
    this.version = spec.version;
    this.generation = spec.generation;
    this.platform = spec.platform;
    this.inputs = spec.inputs;
    this.outputs = spec.outputs;
    this.compiledBatchSizes = [...spec.compiledBatchSizes].sort((a, b) => a - b);
    this.maxBatchSize = Math.max(...this.compiledBatchSizes);
  }

  /**
   * Loads the spec's programs and weights on `engine`, and checks each program's answer for zero
   * inputs against the engine thread's, byte for byte; refuses (throws) on any difference.
   */
  static async create(engine: AbstractBackend, spec: ReplicaSpec): Promise<ReplicaModel> {
    const weights: DeviceBuffer[] = [];
    const locals: Executable[] = [];
    const programs = new Map<number, Executable>();
    try {
      for (const w of spec.weights) weights.push(await engine.upload(w));
      for (const p of spec.programs) {
        const local = await engine.deserialize(p.bytes, {});
        locals.push(local);
        for (const size of p.batchSizes) programs.set(size, local);
        const label = `b${Math.max(...p.batchSizes)}`;
        const us = await warmUp(engine, local, p.referenceInputs, weights);
        if (us > spec.maxRunUs) {
          throw new XlaserveError(
            "INTERNAL",
            Number.isFinite(us)
              ? `its ${label} run takes ${Math.round(us)} us here (limit ${spec.maxRunUs} us)`
              : `its ${label} run does not get through ${TIMED_RUNS} runs in ${WARM_BUDGET_MS} ms of run time here`,
          );
        }
        if (!sameBytes(runSync(engine, local, p.referenceInputs, weights), p.referenceOutputs)) {
          throw new XlaserveError("INTERNAL", `the ${label} program's answer differs from the engine thread's`);
        }
      }
      for (const size of spec.compiledBatchSizes) {
        if (!programs.has(size)) throw new XlaserveError("INTERNAL", `no program for batch size ${size}`);
      }
    } catch (err) {
      for (const w of weights) w.dispose();
      for (const p of locals) p.dispose();
      throw err;
    }
    return new ReplicaModel(spec, engine, programs, locals, weights);
  }

  ready(): boolean {
    return !this.disposed;
  }

  extra(): Record<string, unknown> {
    return { generation: this.generation, replica: true };
  }

  async infer(request: InferRequest): Promise<Map<string, HostTensor>> {
    const t0 = Bun.nanoseconds();
    const d = this.delta;
    try {
      if (this.disposed) throw new XlaserveError("UNAVAILABLE", `model "${this.name}" is not loaded here`);
      const out = this.run(request.inputs);
      const ns = Bun.nanoseconds() - t0;
      d.success.count++;
      d.success.ns += ns;
      d.lastInference = Date.now();
      return out;
    } catch (err) {
      d.fail.count++;
      d.fail.ns += Bun.nanoseconds() - t0;
      throw err;
    }
  }

  /** Pads the batch up to the next compiled size, runs, and cuts the padding off the outputs. */
  private run(inputs: ReadonlyMap<string, HostTensor>): Map<string, HostTensor> {
    const d = this.delta;
    let batch: number | null = null;
    for (const spec of this.inputs) {
      if (spec.batchAxis === null) continue;
      batch = inputs.get(spec.name)?.shape[spec.batchAxis] ?? null;
      if (batch !== null) break;
    }
    const size =
      batch === null ? (this.compiledBatchSizes[0] as number) : chooseBatchSize(this.compiledBatchSizes, batch);
    const program = size === undefined ? undefined : this.programs.get(size);
    if (size === undefined || !program) {
      throw new XlaserveError(
        "INVALID_ARGUMENT",
        `model "${this.name}": batch ${batch} exceeds the largest compiled batch size ${this.maxBatchSize}`,
      );
    }
    const tIn = Bun.nanoseconds();
    const args = this.inputs.map((spec) => {
      const t = inputs.get(spec.name);
      if (!t) throw new XlaserveError("INVALID_ARGUMENT", `model "${this.name}": missing input "${spec.name}"`);
      return spec.batchAxis === null || batch === null ? t : padAxis(t, spec.batchAxis, size);
    });
    const tRun = Bun.nanoseconds();
    const results = runSync(this.engine, program, args, this.weights);
    const tOut = Bun.nanoseconds();
    const out = new Map<string, HostTensor>();
    this.outputs.forEach((spec, o) => {
      const host = results[o] as HostTensor;
      out.set(
        spec.name,
        spec.batchAxis === null || batch === null || batch === size ? host : sliceRange(host, spec.batchAxis, 0, batch),
      );
    });
    const tEnd = Bun.nanoseconds();
    d.inferenceCount += batch ?? 1;
    d.executionCount++;
    d.queue.count++;
    const rows = batch ?? 1;
    countPart(d, "computeInput", tRun - tIn, rows);
    countPart(d, "computeInfer", tOut - tRun, rows);
    countPart(d, "computeOutput", tEnd - tOut, rows);
    return out;
  }

  stats(): ModelStats {
    // Figures live on the main thread's model; this thread only reports deltas (takeDelta).
    return zeroStats();
  }

  /** Statistics since the last call, or null when nothing happened. */
  takeDelta(): ModelStats | null {
    const d = this.delta;
    if (d.success.count === 0 && d.fail.count === 0) return null;
    this.delta = zeroStats();
    return d;
  }

  /** Holds the replica for one request: dropping it then waits until the request is done. */
  pin(): void {
    this.pins++;
  }

  unpin(): void {
    if (--this.pins === 0 && this.dropped) this.dispose();
  }

  /** No new requests; freed once the pinned ones are done. */
  drop(): void {
    this.dropped = true;
    if (this.pins === 0) this.dispose();
  }

  private dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const w of this.weights) w.dispose();
    for (const p of this.locals) p.dispose();
  }
}

/** Warm-up runs (see WARM_RUNS); the median of the last TIMED_RUNS, in microseconds. */
async function warmUp(
  engine: AbstractBackend,
  program: Executable,
  inputs: readonly HostTensor[],
  weights: readonly DeviceBuffer[],
): Promise<number> {
  const times: number[] = [];
  let spentMs = 0;
  let slice = performance.now();
  while (times.length < WARM_RUNS && spentMs < WARM_BUDGET_MS) {
    const t0 = performance.now();
    runSync(engine, program, inputs, weights);
    const ms = performance.now() - t0;
    spentMs += ms;
    times.push(ms * 1000);
    if (performance.now() - slice >= SLICE_MS) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      slice = performance.now();
    }
  }
  if (times.length < TIMED_RUNS) return Number.POSITIVE_INFINITY;
  const last = times.slice(-TIMED_RUNS).sort((a, b) => a - b);
  return last[last.length >> 1] ?? Number.POSITIVE_INFINITY;
}
