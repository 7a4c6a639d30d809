/**
 * A stand-in engine for the worker's unit tests: real buffers in host memory with an allocator
 * that tracks in-use and peak bytes, and programs that compute a deterministic function of their
 * inputs and weights (so a changed weight file changes the answers, and an eviction + reload must
 * give identical ones). The e2e tests use the real CPU engine.
 */
import {
  type AbstractBackend,
  type BackendIdentity,
  type CompileOptions,
  type DeviceBuffer,
  type Executable,
  type HostTensor,
  type MemoryStats,
  type ModuleSource,
  allocTyped,
  elementCount,
  parseMainSignature,
} from "@xlaserve/core";
import type { Bundle, BundleModule } from "@xlaserve/core/bundle/types.ts";
import type { LoadedProgram, ProgramSource } from "../src/model/runtime-model.ts";

class FakeBuffer implements DeviceBuffer {
  disposed = false;
  readonly device = 0;
  readonly byteLength: number;
  constructor(
    readonly owner: FakeBackend,
    readonly dtype: HostTensor["dtype"],
    readonly shape: readonly number[],
    readonly data: HostTensor["data"],
  ) {
    this.byteLength = data.byteLength;
    owner.alloc(this.byteLength);
  }
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.owner.free(this.byteLength);
  }
  [Symbol.dispose](): void {
    this.dispose();
  }
}

export class FakeExecutable implements Executable {
  disposed = false;
  constructor(
    readonly inputCount: number,
    readonly results: ReadonlyArray<{ dtype: HostTensor["dtype"]; shape: readonly number[] }>,
    readonly scratchPerRow: number,
  ) {}
  get outputCount(): number {
    return this.results.length;
  }
  dispose(): void {
    this.disposed = true;
  }
  [Symbol.dispose](): void {
    this.dispose();
  }
}

export class FakeBackend implements AbstractBackend {
  readonly name = "reactant" as const;
  /** Runs compute one at a time, as the CPU engine's do (the worker admits accordingly). */
  readonly serialCompute = true;
  inUse = 0;
  peak = 0;
  /** Simulated compile-time scratch (the probe must not count it). */
  compileScratch = 50_000_000;
  uploads = 0;
  executions = 0;
  compiles = 0;
  execDelayMs = 0;
  disposed = false;
  /**
   * Work left running after a call was answered, as a PJRT hedged load's spare copies: each holds
   * its bytes for a moment when it finishes, which is at the next execute unless
   * settleBackground finishes it first.
   */
  private readonly spares: number[] = [];

  leaveSpare(bytes: number): void {
    this.spares.push(bytes);
  }
  private finishSpares(): void {
    for (const bytes of this.spares.splice(0)) {
      this.alloc(bytes);
      this.free(bytes);
    }
  }
  async settleBackground(): Promise<void> {
    this.finishSpares();
  }

  alloc(n: number): void {
    this.inUse += n;
    this.peak = Math.max(this.peak, this.inUse);
  }
  free(n: number): void {
    this.inUse -= n;
  }
  identity(): BackendIdentity {
    return {
      backend: "reactant",
      platform: "cpu",
      buildId: "fake-1",
      runtimeVersion: "none",
      deviceKind: "cpu",
      computeCapability: "none",
    };
  }
  devices() {
    return [{ id: 0, kind: "cpu", attributes: {} }];
  }
  async upload(tensor: HostTensor): Promise<DeviceBuffer> {
    this.uploads++;
    return new FakeBuffer(this, tensor.dtype, [...tensor.shape], tensor.data.slice());
  }
  async download(buffer: DeviceBuffer): Promise<HostTensor> {
    const b = buffer as FakeBuffer;
    if (b.disposed) throw new Error("download of a disposed buffer");
    return { dtype: b.dtype, shape: [...b.shape], data: b.data.slice() };
  }
  /** Compiles from the text's @main signature, taking the first argument as the only model input. */
  async compile(module: ModuleSource, _options: CompileOptions): Promise<Executable> {
    this.compiles++;
    this.alloc(this.compileScratch);
    this.free(this.compileScratch);
    const sig = parseMainSignature(new TextDecoder().decode(module.bytes));
    return new FakeExecutable(1, sig.results, 1000);
  }
  async serialize(): Promise<Uint8Array> {
    return new Uint8Array();
  }
  async deserialize(): Promise<Executable> {
    throw new Error("not supported");
  }
  async execute(executable: Executable, args: readonly DeviceBuffer[]): Promise<DeviceBuffer[]> {
    const exe = executable as FakeExecutable;
    if (exe.disposed) throw new Error("execute of a disposed program");
    for (const a of args) if ((a as FakeBuffer).disposed) throw new Error("execute with a disposed buffer");
    this.finishSpares();
    this.executions++;
    const inputs = args.slice(0, exe.inputCount) as FakeBuffer[];
    const weights = args.slice(exe.inputCount) as FakeBuffer[];
    let wsum = 0;
    for (const w of weights) {
      const d = w.data as Float32Array;
      for (let i = 0; i < d.length; i++) wsum += (d[i] ?? 0) * ((i % 7) + 1);
    }
    const first = inputs[0];
    const rows = first?.shape[0] ?? 1;
    const scratch = exe.scratchPerRow * rows;
    this.alloc(scratch);
    if (this.execDelayMs > 0) await Bun.sleep(this.execDelayMs);
    const out: DeviceBuffer[] = [];
    for (const r of exe.results) {
      const data = allocTyped(r.dtype, elementCount(r.shape)) as Float32Array;
      const perRow = elementCount(r.shape.slice(1));
      const inRow = first ? elementCount(first.shape.slice(1)) : 0;
      for (let b = 0; b < (r.shape[0] ?? 1); b++) {
        let s = 0;
        if (first) for (let i = 0; i < inRow; i++) s += Number((first.data as Float32Array)[b * inRow + i] ?? 0);
        for (let j = 0; j < perRow; j++) data[b * perRow + j] = s * 0.001 + wsum * 1e-3 + j;
      }
      out.push(new FakeBuffer(this, r.dtype, [...r.shape], data));
    }
    this.free(scratch);
    return out;
  }
  memoryStats(): MemoryStats {
    return { inUseBytes: this.inUse, peakBytes: this.peak, limitBytes: null };
  }
  resetPeakMemory(): void {
    this.peak = this.inUse;
  }
  async dispose(): Promise<void> {
    this.disposed = true;
  }
}

/** Programs for the fake engine: results from each module's parsed @main signature. */
export function fakePrograms(
  backend: FakeBackend,
  opts: {
    /** Run scratch per batch row, for every bundle or per bundle name. */
    scratchPerRow?: number | ((bundle: string) => number);
    /** Simulated compile time, for every bundle or per bundle name (to order concurrent loads). */
    compileMs?: number | ((bundle: string) => number);
  } = {},
): ProgramSource & {
  calls: Array<{ bundle: string; file: string }>;
} {
  const calls: Array<{ bundle: string; file: string }> = [];
  const source = async (bundle: Bundle, module: BundleModule): Promise<LoadedProgram> => {
    calls.push({ bundle: bundle.name, file: module.file });
    if (!module.signature) throw new Error(`${module.file} has no parsed signature`);
    // Compile-time scratch: raises the peak mark, which the probe must reset.
    backend.alloc(backend.compileScratch);
    backend.free(backend.compileScratch);
    const compileMs = typeof opts.compileMs === "function" ? opts.compileMs(bundle.name) : (opts.compileMs ?? 0);
    if (compileMs > 0) await Bun.sleep(compileMs);
    const scratchPerRow =
      typeof opts.scratchPerRow === "function" ? opts.scratchPerRow(bundle.name) : (opts.scratchPerRow ?? 1000);
    const exe = new FakeExecutable(bundle.manifest.executableInputs.length, module.signature.results, scratchPerRow);
    return { executable: exe, outcome: "miss", compileMs, loadMs: 0 };
  };
  return Object.assign(source, { calls });
}

/** Factory for the engine thread (threaded-backend tests). */
export function createFakeBackend(): FakeBackend {
  return new FakeBackend();
}
