/**
 * Which host memory is a shared mapping of a file (a POSIX shared-memory object mapped
 * MAP_SHARED), so that whoever moves a tensor to another thread can hand over where its bytes
 * live instead of the bytes: the other thread maps the same file and reads them in place. The
 * mapping's owner notes it once; a view of it is then recognised by its buffer.
 */
const files = new WeakMap<ArrayBufferLike, string>();

/** Notes that `mapping` (the whole mapping, from the file's first byte) maps the file at `path`. */
export function noteMappedFile(mapping: Uint8Array, path: string): void {
  if (mapping.byteOffset !== 0) throw new Error("noteMappedFile: the view must start at the mapping's first byte");
  files.set(mapping.buffer, path);
}

/** Where a view's bytes lie in a noted mapping's file, or undefined for any other memory. */
export function mappedFileOf(view: ArrayBufferView): { readonly path: string; readonly offset: number } | undefined {
  const path = files.get(view.buffer);
  return path === undefined ? undefined : { path, offset: view.byteOffset };
}
