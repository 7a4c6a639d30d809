import { type NDArray, type TypedArray, sameShape } from "../array.ts";

/**
 * Results an op derives from storage the arena did not make (uploaded weights, plan constants:
 * Arena.version 0, contents that never change), kept per operand storage while it lives. The
 * kept arrays are not the arena's, so no later step writes into them in place (soleOwner) and
 * they never return to its pool; the memory probe does not count them while no slot holds one.
 */
export class ExternalResults {
  private readonly kept = new WeakMap<TypedArray, { readonly operandShape: number[]; readonly result: NDArray }>();
  /** Storage seen once: a request's large input is new on every run, and is not kept for. */
  private readonly seen = new WeakSet<TypedArray>();

  /**
   * `keep()`'s result for x's storage and shape from the second sight of that storage on (made
   * then, outside the pool); `once()`'s on the first.
   */
  get(x: NDArray, keep: () => NDArray, once: () => NDArray): NDArray {
    let entry = this.kept.get(x.data);
    if (entry === undefined || !sameShape(entry.operandShape, x.shape)) {
      if (!this.seen.has(x.data)) {
        this.seen.add(x.data);
        return once();
      }
      entry = { operandShape: [...x.shape], result: keep() };
      this.kept.set(x.data, entry);
    }
    const r = entry.result;
    return { type: r.type, shape: [...r.shape], data: r.data };
  }
}
