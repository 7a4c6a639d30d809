/**
 * What the heavy kernels' WebAssembly modules (im2col, pooling) share: instantiating once per
 * thread, null where WebAssembly SIMD is missing (compiling validates: a runtime without SIMD
 * throws a CompileError, one without WebAssembly a ReferenceError), and laying out regions of
 * the module's own memory, grown as needed and never past a cap.
 */

export interface WithMemory {
  readonly memory: WebAssembly.Memory;
}

/** A lazily made instance: the first call compiles, later calls return it (or null). */
export function lazyInstance<T extends WithMemory>(bytes: () => Uint8Array<ArrayBuffer>): () => T | null {
  let instance: T | null | undefined;
  return () => {
    if (instance === undefined) {
      try {
        instance = new WebAssembly.Instance(new WebAssembly.Module(bytes()), {}).exports as unknown as T;
      } catch {
        instance = null;
      }
    }
    return instance;
  };
}

/** A module's memory stays below this; larger work keeps the JavaScript loops. */
export const MAX_MODULE_BYTES = 1 << 30;
/** Room past each region for vector loads and stores that run past its end. */
export const SLACK = 64;

/** Bytes rounded up to a 64-byte boundary. */
export function align64(bytes: number): number {
  return Math.ceil(bytes / 64) * 64;
}

/** The memory's buffer after growing it to at least `bytes`. */
export function reserve(memory: WebAssembly.Memory, bytes: number): ArrayBuffer {
  const have = memory.buffer.byteLength;
  if (bytes > have) memory.grow(Math.ceil((bytes - have) / 65536));
  return memory.buffer;
}
