import { XlaserveError } from "./errors.ts";
import type { HostTensor } from "./tensor.ts";
import type { DType } from "./dtypes.ts";

/**
 * The one contract between the worker and an execution engine. The PJRT backend
 * (packages/backend-pjrt) and the CPU engine (packages/backend-reactant) implement it; nothing
 * above core knows which one it holds.
 *
 * Lifecycle: construct (the package's `create...Backend` factory), use, `dispose()`. Buffers and
 * executables are owned by the caller and released with `dispose()` (or `using`); backends also
 * release them on garbage collection as a safety net, never as the plan.
 */
export interface AbstractBackend {
  /** "pjrt" or "reactant". */
  readonly name: BackendName;

  /**
   * Everything that makes a compiled program valid or invalid on this backend. The program
   * cache partitions by every field (ARCHITECTURE rule 2): XLA checks only the compute
   * capability when it loads a program, so the cache must check the rest.
   */
  identity(device?: number): BackendIdentity;

  devices(): readonly DeviceInfo[];

  /** Copies a host tensor to the device. The host memory may be reused once this resolves. */
  upload(tensor: HostTensor, device?: number): Promise<DeviceBuffer>;

  /** Copies a device buffer back to a new host tensor. */
  download(buffer: DeviceBuffer): Promise<HostTensor>;

  /** Compiles one StableHLO module (text or portable-artifact bytecode). */
  compile(module: ModuleSource, options: CompileOptions): Promise<Executable>;

  /** Serializes a compiled program so `deserialize` can load it without compiling. */
  serialize(executable: Executable): Promise<Uint8Array>;

  /** Loads a program written by `serialize` on a backend of the same identity. */
  deserialize(bytes: Uint8Array, options: CompileOptions): Promise<Executable>;

  /**
   * Runs a program. `args` are the module's parameters in call order: the model inputs first,
   * then the weights in the bundle's argument order. The args are not consumed (weights stay
   * resident across calls); the results belong to the caller.
   */
  execute(executable: Executable, args: readonly DeviceBuffer[]): Promise<DeviceBuffer[]>;

  /** Allocator figures for a device. */
  memoryStats(device?: number): MemoryStats;

  /**
   * Resets the device's peak-memory mark to what is in use now (PJRT_Device_ClearMemoryStats).
   * The memory probe calls it before each model so compile-time scratch (autotuning) does not
   * count as a model's run scratch (ARCHITECTURE rule 5).
   */
  resetPeakMemory(device?: number): void;

  /**
   * Resolves once work the backend goes on with after answering a call has finished and freed
   * what it held: the PJRT backend's spare copies of a hedged load. The memory probe awaits it
   * before resetting the peak, so such work never lands in a model's measured scratch. Backends
   * without such work leave it out.
   */
  settleBackground?(): Promise<void>;

  /** Releases the client and everything it still holds. Idempotent. */
  dispose(): Promise<void>;

  // What a backend may offer beyond the contract above. The worker chooses where each program
  // runs from these (its placement), never from the backend's name or class.

  /**
   * Each call computes to the end before its promise is returned, and runs never overlap (the CPU
   * engine). Admitting more requests at once then only queues them, and a second instance of the
   * engine can run a short program on the calling thread.
   */
  readonly serialCompute?: boolean;

  /**
   * One request in one call: uploads `inputs`, runs the program on them followed by the resident
   * `weights`, downloads every result and frees the temporaries (an engine on its own thread: one
   * round trip instead of three).
   */
  run?(executable: Executable, inputs: readonly HostTensor[], weights: readonly DeviceBuffer[]): Promise<HostTensor[]>;

  /**
   * Input bytes run() handed to the engine so far: `moved` without a copy (buffers the request
   * path noted movable, transferred), `copied` on the way (an engine on its own thread).
   */
  inputHandover?(): { readonly movedBytes: number; readonly copiedBytes: number };

  /** Each run's microseconds, run after run until `maxRuns` or `budgetMs` is spent. */
  timeRuns?(
    executable: Executable,
    inputs: readonly HostTensor[],
    weights: readonly DeviceBuffer[],
    maxRuns: number,
    budgetMs: number,
  ): Promise<number[]>;

  /**
   * The same engine once more, on the calling thread, for programs short enough to run there.
   * Absent where no such second instance may run (a second PJRT client would be another device
   * context with memory of its own).
   */
  localTwin?(): Promise<AbstractBackend>;

  /**
   * memoryStats() once every earlier call has landed (a backend that reports its figures lazily,
   * such as an engine on its own thread). The memory probe reads the figures through it.
   */
  refreshMemoryStats?(): Promise<MemoryStats>;
}

/** Where a backend comes from: a module and the factory it exports, called with `args`. */
export interface BackendSpec {
  /** Module specifier ("@xlaserve/backend-reactant" or an absolute path). */
  readonly module: string;
  /** The factory: `(args) => AbstractBackend`. */
  readonly export: string;
  readonly args?: unknown;
}

export type BackendName = "pjrt" | "reactant";

export interface BackendIdentity {
  readonly backend: BackendName;
  /** Platform: "cuda", "rocm", "tpu", "cpu". */
  readonly platform: string;
  /**
   * Build of the compiler: for PJRT the plugin's xla_version attribute plus a hash of the plugin
   * file; for the CPU engine its plan-format version.
   */
  readonly buildId: string;
  /** Runtime under the compiler (CUDA runtime version from the platform version), or "none". */
  readonly runtimeVersion: string;
  /** Device kind as the runtime names it ("NVIDIA H200", "cpu"). */
  readonly deviceKind: string;
  /** Compute capability ("9.0"), or "none" where the device has none. */
  readonly computeCapability: string;
}

export interface DeviceInfo {
  readonly id: number;
  readonly kind: string;
  readonly attributes: Readonly<Record<string, string | number | boolean>>;
}

export interface MemoryStats {
  readonly inUseBytes: number;
  readonly peakBytes: number;
  /** Usable device memory, or null where the runtime does not report it. */
  readonly limitBytes: number | null;
  /**
   * Bytes the allocator holds for its pool: what it claimed from the device (PJRT's pool_bytes),
   * or on the CPU engine its live buffers plus the freed ones it keeps for reuse. Absent where the
   * runtime does not report it.
   */
  readonly poolBytes?: number;
  /** The largest contiguous free block the allocator has (bytes), where it reports one. */
  readonly largestFreeBlockBytes?: number;
}

export interface DeviceBuffer {
  readonly dtype: DType;
  /** Row-major dimensions. */
  readonly shape: readonly number[];
  readonly byteLength: number;
  readonly device: number;
  /** Frees the device memory. Idempotent. */
  dispose(): void;
  [Symbol.dispose](): void;
}

export interface Executable {
  /** Number of results `execute` returns. */
  readonly outputCount: number;
  /** Frees the compiled program. Idempotent. */
  dispose(): void;
  [Symbol.dispose](): void;
}

export interface ModuleSource {
  readonly bytes: Uint8Array;
  /** "text" for pretty-printed or generic MLIR; "bytecode" for an MLIR portable artifact. */
  readonly format: ModuleFormat;
  /** Where it came from, for error messages ("resnet/model.b1.mlir"). */
  readonly origin?: string;
}

export type ModuleFormat = "text" | "bytecode";

/** MLIR bytecode starts with "ML\xefR". */
export function detectModuleFormat(bytes: Uint8Array): ModuleFormat {
  return bytes.length >= 4 && bytes[0] === 0x4d && bytes[1] === 0x4c && bytes[2] === 0xef && bytes[3] === 0x52
    ? "bytecode"
    : "text";
}

/**
 * Options that change the compiled program. Every field takes part in the cache key (the
 * canonical JSON of this object is hashed), so add fields only when they change the program.
 */
export interface CompileOptions {
  /** Ask for a compile that gives the same bits twice (XLA: no autotuning, deterministic ops). */
  readonly deterministic?: boolean;
  /** Extra XLA debug options / flags passed to the compiler. */
  readonly xlaFlags?: Readonly<Record<string, string | number | boolean>>;
  /** Device the program is compiled for. */
  readonly device?: number;
  /**
   * Compile the module with its source locations. Off by default: PJRT then compiles it with every
   * location alias set to unknown, because XLA keeps locations as HLO metadata that each load of the
   * program parses again (see the PJRT backend's module-locations.ts). Other backends ignore it.
   */
  readonly keepLocations?: boolean;
}

/** Canonical (key-sorted) JSON of compile options, the input to the cache's options hash. */
export function canonicalCompileOptions(options: CompileOptions): string {
  const flags = options.xlaFlags ?? {};
  const sortedFlags = Object.fromEntries(
    Object.keys(flags)
      .sort()
      .map((k) => [k, flags[k]]),
  );
  return JSON.stringify({
    deterministic: options.deterministic ?? false,
    device: options.device ?? 0,
    // Only when set, so the keys of programs cached before the option existed stay valid.
    ...(options.keepLocations ? { keepLocations: true } : {}),
    xlaFlags: sortedFlags,
  });
}

/**
 * Narrows a buffer or executable handed to a backend to that backend's own class. A value from
 * another backend (or another client) would be read as the wrong memory, so it is refused.
 */
export function ownedBy<T>(value: unknown, owner: abstract new (...args: never[]) => T, description: string): T {
  if (!(value instanceof owner)) {
    throw new XlaserveError("INVALID_ARGUMENT", `the ${description} does not belong to this backend`);
  }
  return value;
}
