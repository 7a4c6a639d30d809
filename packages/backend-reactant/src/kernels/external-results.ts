import { type NDArray, type TypedArray, sameShape } from "../array.ts";

/**
 * Results an op derives from storage whose contents stay the same from run to run (uploaded
 * weights, plan constants), kept per operand storage while it lives. Contents are known by the
 * storage's version (Arena.version: the same number, the same contents), so a small weight the
 * arena's pool holds is kept like a large one it does not, while an activation, whose pooled
 * storage gets a new version every run, never is. The kept arrays are not the arena's, so no
 * later step writes into them in place (soleOwner) and they never return to its pool; the
 * memory probe does not count them while no slot holds one.
 */
export class ExternalResults {
  private readonly kept = new WeakMap<
    TypedArray,
    { readonly operandShape: number[]; readonly version: number; readonly result: NDArray }
  >();
  /** The version each storage was last seen at: contents seen once (a request's input) are not kept for. */
  private readonly seen = new WeakMap<TypedArray, number>();

  /**
   * `keep()`'s result for x's storage, shape and `version` from the second sight of that
   * storage at that version on (made then, outside the pool); `once()`'s before.
   */
  get(x: NDArray, version: number, keep: () => NDArray, once: () => NDArray): NDArray {
    let entry = this.kept.get(x.data);
    if (entry === undefined || entry.version !== version || !sameShape(entry.operandShape, x.shape)) {
      if (this.seen.get(x.data) !== version) {
        this.seen.set(x.data, version);
        return once();
      }
      entry = { operandShape: [...x.shape], version, result: keep() };
      this.kept.set(x.data, entry);
    }
    const r = entry.result;
    return { type: r.type, shape: [...r.shape], data: r.data };
  }
}
