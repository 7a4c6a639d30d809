import {
  ownedBy,
  type AbstractBackend,
  type BackendIdentity,
  type CompileOptions,
  type DeviceBuffer,
  type DeviceInfo,
  type Executable,
  type HostTensor,
  type MemoryStats,
  type ModuleSource,
  XlaserveError,
  isXlaserveError,
} from "@xlaserve/core";
import { type NDArray, elementCount, sameShape, slotsPerElement } from "./array.ts";
import { withCanonicalNaNs } from "./canonical-nans.ts";
import type { Module, TensorType } from "@xlaserve/stablehlo";
import { readModuleBytes } from "./read-module.ts";
import { Arena, takeData } from "./plan/arena.ts";
import { closeFusedSimdPool } from "./plan/fused-simd.ts";
import { dtypeOf, elemTypeOf } from "./plan/dtype-map.ts";
import { type CompiledFunction, type OpTime, Program, type StepTimes, release, retain } from "./plan/program.ts";
import { PLAN_FORMAT_VERSION, deserializeModule, serializeModule } from "./plan/serialize.ts";
import { type RtValue, isArray } from "./plan/values.ts";

/** Uploads up to this size are copied into pooled storage (see upload). */
const POOLED_UPLOAD_BYTES = 1 << 16;

/**
 * Bumped whenever kernels change results or the arena's accounting changes (the memory probe's
 * scratch figures are stored per program identity), so cached plans and stored figures of older
 * engines are not reused. 0.2.0: small arrays are pooled too.
 */
export const ENGINE_VERSION = "0.2.0";

export interface ReactantBackendOptions {
  /** Reported as the device kind; the cache partitions by it. Default "cpu". */
  readonly deviceKind?: string;
  /**
   * When given, every execute adds each op's time to it (op name -> total ms and count): the
   * per-op profile bench/ reports. Costs two clock reads per op.
   */
  readonly profile?: Map<string, OpTime>;
  /** When given, every execute adds each step's exclusive time to it (profile.ts reports it). */
  readonly steps?: StepTimes;
}

class ReactantBuffer implements DeviceBuffer {
  private disposed = false;
  readonly dtype;
  readonly shape: readonly number[];
  readonly byteLength: number;
  readonly device = 0;

  /** `counted`: the storage already carries a count for this buffer (an execute result). */
  constructor(
    readonly value: NDArray,
    private readonly arena: Arena,
    counted = false,
  ) {
    this.dtype = dtypeOf(value.type);
    this.shape = [...value.shape];
    this.byteLength = value.data.byteLength;
    if (!counted) arena.retain(value.data);
  }

  get isDisposed(): boolean {
    return this.disposed;
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.arena.release(this.value.data);
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}

class ReactantExecutable implements Executable {
  private disposed = false;
  readonly outputCount: number;

  constructor(
    readonly module: Module,
    readonly entry: CompiledFunction,
    readonly argTypes: (TensorType | null)[],
    readonly resultTypes: (TensorType | null)[],
    private readonly arena: Arena,
  ) {
    this.outputCount = entry.outputCount;
    for (const v of entry.constants.values()) retain(arena, v);
  }

  get isDisposed(): boolean {
    return this.disposed;
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const v of this.entry.constants.values()) release(this.arena, v);
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}

/**
 * The CPU engine behind core's AbstractBackend: StableHLO text is parsed, compiled into a plan
 * and run by the engine's kernels. "Device" memory is host memory; the arena counts it.
 */
export function createReactantBackend(options: ReactantBackendOptions = {}): AbstractBackend {
  const arena = new Arena({ pool: true });
  let disposed = false;
  const alive = () => {
    if (disposed) throw new XlaserveError("DISPOSED", "the reactant backend was disposed");
  };
  const identity: BackendIdentity = {
    backend: "reactant",
    platform: "cpu",
    buildId: `plan${PLAN_FORMAT_VERSION}-engine${ENGINE_VERSION}`,
    runtimeVersion: "none",
    deviceKind: options.deviceKind ?? "cpu",
    computeCapability: "none",
  };

  const load = (module: Module): ReactantExecutable => {
    try {
      const program = new Program(module);
      const name = program.entryName();
      const entry = program.func(name);
      const f = module.funcs.find((x) => x.name === name);
      const argTypes = (f?.args ?? []).map((a) => (a.type.kind === "tensor" ? a.type : null));
      const resultTypes = (f?.resultTypes ?? []).map((t) => (t.kind === "tensor" ? t : null));
      return new ReactantExecutable(module, entry, argTypes, resultTypes, arena);
    } catch (e) {
      if (isXlaserveError(e)) throw e;
      throw new XlaserveError("COMPILE_FAILED", `compile failed: ${(e as Error).message}`, {}, { cause: e });
    }
  };

  return {
    name: "reactant",
    // Every kernel runs on the calling thread before a call returns.
    serialCompute: true,
    identity: () => identity,
    devices: (): readonly DeviceInfo[] => [{ id: 0, kind: identity.deviceKind, attributes: { platform: "cpu" } }],

    async upload(tensor: HostTensor): Promise<DeviceBuffer> {
      alive();
      const type = elemTypeOf(tensor.dtype);
      const expected = elementCount(tensor.shape) * slotsPerElement(type);
      if (tensor.data.length !== expected) {
        throw new XlaserveError(
          "INVALID_ARGUMENT",
          `tensor data has ${tensor.data.length} elements, shape needs ${expected}`,
        );
      }
      // Copied: the caller may reuse its memory once upload resolves. Small inputs (a request's
      // features) go through the pool, like every kernel's output; large tensors (weights) are
      // kept out of it, so disposing of a model gives their memory back.
      let data: NDArray["data"] | null = null;
      if (tensor.data.byteLength <= POOLED_UPLOAD_BYTES) {
        const pooled = takeData(arena, type, expected / slotsPerElement(type));
        // A host array of another class than the engine's storage is left to slice() below.
        if (pooled.constructor === tensor.data.constructor) {
          (pooled as Float64Array).set(tensor.data as Float64Array);
          data = pooled;
        }
      }
      data ??= tensor.data.slice() as NDArray["data"];
      return new ReactantBuffer({ type, shape: [...tensor.shape], data }, arena);
    },

    async download(buffer: DeviceBuffer): Promise<HostTensor> {
      alive();
      const b = ownedBy(buffer, ReactantBuffer, "buffer");
      // Its storage may already serve another run (the arena recycles released buffers).
      if (b.isDisposed) throw new XlaserveError("DISPOSED", "the buffer was disposed");
      return { dtype: b.dtype, shape: [...b.value.shape], data: b.value.data.slice() as HostTensor["data"] };
    },

    async compile(source: ModuleSource, _options: CompileOptions): Promise<Executable> {
      alive();
      // Text or a portable artifact (MLIR bytecode): both read into the same program model.
      return load(readModuleBytes(source.bytes, source.origin ?? "<module>"));
    },

    async serialize(executable: Executable): Promise<Uint8Array> {
      alive();
      return serializeModule(ownedBy(executable, ReactantExecutable, "executable").module, { engine: ENGINE_VERSION });
    },

    async deserialize(bytes: Uint8Array, _options: CompileOptions): Promise<Executable> {
      alive();
      const { module, meta } = deserializeModule(bytes);
      if (meta.engine !== ENGINE_VERSION) {
        throw new XlaserveError(
          "CACHE_PARTITION_MISMATCH",
          `plan written by engine ${String(meta.engine)}, this is ${ENGINE_VERSION}`,
        );
      }
      return load(module);
    },

    async execute(executable: Executable, args: readonly DeviceBuffer[]): Promise<DeviceBuffer[]> {
      alive();
      const exe = ownedBy(executable, ReactantExecutable, "executable");
      if (exe.isDisposed) throw new XlaserveError("DISPOSED", "the executable was disposed");
      if (args.length !== exe.argTypes.length) {
        throw new XlaserveError(
          "INVALID_ARGUMENT",
          `the program takes ${exe.argTypes.length} arguments, got ${args.length}`,
        );
      }
      const values: RtValue[] = new Array(args.length);
      for (let i = 0; i < args.length; i++) {
        const b = ownedBy(args[i], ReactantBuffer, "buffer");
        if (b.isDisposed) throw new XlaserveError("DISPOSED", `argument ${i} was disposed`);
        const t = exe.argTypes[i];
        if (t && (t.elem !== b.value.type || !sameShape(t.shape, b.value.shape))) {
          throw new XlaserveError(
            "INVALID_ARGUMENT",
            `argument ${i} is ${b.value.type}[${b.value.shape}], the program expects ${t.elem}[${t.shape}]`,
            { argument: i },
          );
        }
        values[i] = b.value;
      }
      let results: RtValue[];
      try {
        results = exe.entry.invoke(values, {
          arena,
          failures: [],
          ...(options.profile ? { profile: options.profile } : {}),
          ...(options.steps ? { steps: options.steps } : {}),
        });
      } catch (e) {
        if (isXlaserveError(e) && e.code !== "INTERNAL") throw e;
        throw new XlaserveError("EXECUTE_FAILED", `execution failed: ${(e as Error).message}`, {}, { cause: e });
      }
      const problem = checkResults(results, exe.resultTypes);
      if (problem) {
        for (const r of results) release(arena, r);
        throw problem;
      }
      // invoke handed the results over counted: each buffer takes over one count, or, where a
      // NaN made a copy, the copy is counted and the result's count dropped.
      return results.map((r) => {
        const out = withCanonicalNaNs(r as NDArray);
        if (out === r) return new ReactantBuffer(out, arena, true);
        arena.release((r as NDArray).data);
        return new ReactantBuffer(out, arena);
      });
    },

    memoryStats: (): MemoryStats => ({
      inUseBytes: arena.inUseBytes,
      peakBytes: arena.peakBytes,
      limitBytes: null,
      // Host memory is paged: no largest free block to report, and the pool is what the arena holds.
      poolBytes: arena.inUseBytes + arena.pooledBytes,
    }),
    resetPeakMemory: () => arena.resetPeak(),
    async dispose(): Promise<void> {
      disposed = true;
      arena.clearPool();
      // The threads large fused trees split over (a later backend on this thread starts new ones).
      closeFusedSimdPool();
    },
  };
}

/** A cheap guard against engine bugs: results must have the declared types and shapes. */
function checkResults(results: RtValue[], declared: (TensorType | null)[]): XlaserveError | null {
  for (let i = 0; i < results.length; i++) {
    const r = results[i];
    if (!isArray(r)) return new XlaserveError("UNSUPPORTED", "tuple and token results are not supported");
    const t = declared[i];
    if (t && (t.elem !== r.type || !sameShape(t.shape, r.shape))) {
      return new XlaserveError(
        "INTERNAL",
        `result ${i} is ${r.type}[${r.shape}], the program declares ${t.elem}[${t.shape}]`,
      );
    }
  }
  return null;
}
