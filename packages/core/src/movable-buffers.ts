/**
 * Which host buffers only one request uses, so that whoever moves its tensors to another thread
 * may transfer the buffer (postMessage's transfer list: no copy, the sender's views are detached)
 * instead of copying the bytes. The request path notes what it allocates for one request (a
 * request body, the joined inputs of one execution); anything not noted (weights, a caller's own
 * arrays, shared memory) is copied as before.
 */
const movable = new WeakSet<ArrayBufferLike>();

/** Notes that `buffer` belongs to one request alone, and may be handed to another thread. */
export function noteMovable(buffer: ArrayBufferLike): void {
  movable.add(buffer);
}

/** Whether a view's buffer was noted movable (a transferable ArrayBuffer, not already detached). */
export function isMovable(view: ArrayBufferView): boolean {
  const buffer = view.buffer;
  return buffer instanceof ArrayBuffer && !buffer.detached && movable.has(buffer);
}
