import { appendFileSync } from "node:fs";
import {
  type AbstractBackend,
  type BackendIdentity,
  type BackendName,
  type CompileOptions,
  type DeviceBuffer,
  type DeviceInfo,
  type Executable,
  type HostTensor,
  type MemoryStats,
  type ModuleSource,
  canonicalCompileOptions,
} from "@xlaserve/core";

/**
 * A small, real backend for the cache's tests. "Compiling" derives a program from the module
 * bytes and options (a byte-substitution table plus a key stream, from sha256 in counter mode);
 * executing maps input bytes through it. Every payload byte affects the outputs, so an entry the
 * cache failed to reject would show up as wrong outputs. deserialize does not validate (like a
 * real runtime that trusts its input), so catching corruption is the cache's job alone.
 */
export const PROGRAM_BYTES = 256 + 4096;

export class TestExecutable implements Executable {
  readonly outputCount = 1;
  disposed = false;
  constructor(readonly program: Uint8Array) {}
  dispose(): void {
    this.disposed = true;
  }
  [Symbol.dispose](): void {
    this.dispose();
  }
}

class HostBuffer implements DeviceBuffer {
  readonly device = 0;
  constructor(
    readonly dtype: HostTensor["dtype"],
    readonly shape: readonly number[],
    readonly bytes: Uint8Array,
  ) {}
  get byteLength(): number {
    return this.bytes.length;
  }
  dispose(): void {}
  [Symbol.dispose](): void {}
}

export interface HashBackendOptions {
  /** Makes compiles slow enough for processes to race. */
  readonly compileDelayMs?: number;
  /** Each compile appends "<pid> <module origin>\n" here: counts compiles across processes. */
  readonly compileLog?: string;
}

export function deriveProgram(source: Uint8Array, options: CompileOptions): Uint8Array {
  const out = new Uint8Array(PROGRAM_BYTES);
  const seed = new Bun.CryptoHasher("sha256").update(source).update(canonicalCompileOptions(options)).digest();
  for (let block = 0; block * 32 < out.length; block++) {
    const h = new Bun.CryptoHasher("sha256").update(seed).update(String(block)).digest();
    out.set(h.subarray(0, Math.min(32, out.length - block * 32)), block * 32);
  }
  return out;
}

export class HashBackend implements AbstractBackend {
  readonly name: BackendName;
  compiles = 0;
  deserializes = 0;

  constructor(
    private readonly id: BackendIdentity,
    private readonly opts: HashBackendOptions = {},
  ) {
    this.name = id.backend;
  }

  identity(): BackendIdentity {
    return this.id;
  }

  devices(): readonly DeviceInfo[] {
    return [{ id: 0, kind: this.id.deviceKind, attributes: {} }];
  }

  async upload(tensor: HostTensor): Promise<DeviceBuffer> {
    const src = new Uint8Array(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength);
    return new HostBuffer(tensor.dtype, tensor.shape, src.slice());
  }

  async download(buffer: DeviceBuffer): Promise<HostTensor> {
    const b = buffer as HostBuffer;
    return { dtype: b.dtype, shape: b.shape, data: b.bytes.slice() };
  }

  async compile(module: ModuleSource, options: CompileOptions): Promise<Executable> {
    if (this.opts.compileDelayMs) await Bun.sleep(this.opts.compileDelayMs);
    this.compiles++;
    if (this.opts.compileLog) appendFileSync(this.opts.compileLog, `${process.pid} ${module.origin ?? "?"}\n`);
    return new TestExecutable(deriveProgram(module.bytes, options));
  }

  async serialize(executable: Executable): Promise<Uint8Array> {
    return (executable as TestExecutable).program.slice();
  }

  async deserialize(bytes: Uint8Array): Promise<Executable> {
    this.deserializes++;
    if (bytes.length !== PROGRAM_BYTES) throw new Error(`program must be ${PROGRAM_BYTES} bytes, got ${bytes.length}`);
    return new TestExecutable(bytes.slice());
  }

  async execute(executable: Executable, args: readonly DeviceBuffer[]): Promise<DeviceBuffer[]> {
    const p = (executable as TestExecutable).program;
    const input = (args[0] as HostBuffer).bytes;
    const out = new Uint8Array(input.length);
    for (let i = 0; i < input.length; i++) {
      out[i] = p[(input[i]! + p[256 + (i % 4096)]!) & 255]!;
    }
    return [new HostBuffer("u8", [out.length], out)];
  }

  memoryStats(): MemoryStats {
    return { inUseBytes: 0, peakBytes: 0, limitBytes: null };
  }

  resetPeakMemory(): void {}

  async dispose(): Promise<void> {}
}

export const BASE_IDENTITY: BackendIdentity = {
  backend: "pjrt",
  platform: "cuda",
  buildId: "xla 0.5.1 plugin:0a1b2c3d",
  runtimeVersion: "12.8",
  deviceKind: "NVIDIA H200",
  computeCapability: "9.0",
};

/** Runs a program on a fixed 4 KiB input: equal outputs mean the same program. */
export async function runProgram(backend: AbstractBackend, executable: Executable): Promise<Uint8Array> {
  const input = new Uint8Array(4096);
  for (let i = 0; i < input.length; i++) input[i] = (i * 31 + 7) & 255;
  const arg = await backend.upload({ dtype: "u8", shape: [input.length], data: input });
  const [out] = await backend.execute(executable, [arg]);
  return (await backend.download(out!)).data as Uint8Array;
}
