import type { SlotSet } from "./block-slots.ts";
import type { Step } from "./types.ts";

/**
 * A number per slot for one block at a time (use counts, last uses), in one typed array reused
 * by every block of the function: cleared by resetting only the slots it touched.
 */
export class SlotNumbers {
  private values = new Int32Array(256);
  /** The slots set since the last clear, in the order first set. */
  readonly touched: number[] = [];

  get(slot: number): number | undefined {
    const v = this.values[slot];
    return v === 0 ? undefined : v;
  }

  set(slot: number, value: number): void {
    if (slot >= this.values.length) {
      const grown = new Int32Array(Math.max(this.values.length * 2, slot + 1));
      grown.set(this.values);
      this.values = grown;
    }
    if (this.values[slot] === 0) this.touched.push(slot);
    this.values[slot] = value;
  }

  clear(): void {
    for (const s of this.touched) this.values[s] = 0;
    this.touched.length = 0;
  }
}

/** How many times a block reads each slot: step inputs, nested blocks' captures, its results. */
export function countUses(into: SlotNumbers, stepUses: number[][], resultSlots: number[]): SlotNumbers {
  into.clear();
  for (const uses of stepUses) for (const u of uses) into.set(u, (into.get(u) ?? 0) + 1);
  for (const u of resultSlots) into.set(u, (into.get(u) ?? 0) + 1);
  return into;
}

/**
 * Liveness: each slot the block defines is freed by the step that reads it last (or by the step
 * that makes it, if nothing reads it), unless it is a result or a plan constant.
 */
export function assignFrees(
  last: SlotNumbers,
  steps: Step[],
  uses: number[][],
  results: number[],
  locals: SlotSet,
  constants: Map<number, unknown>,
): void {
  last.clear();
  // Step i is stored as i + 1: 0 means unset.
  for (let i = 0; i < steps.length; i++) {
    for (const s of uses[i] as number[]) last.set(s, i + 1);
    for (const s of (steps[i] as Step).outputs) if (last.get(s) === undefined) last.set(s, i + 1);
  }
  const kept = results.length > 0 ? new Set(results) : null;
  for (const slot of last.touched) {
    if (!locals.has(slot) || kept?.has(slot) || constants.has(slot)) continue;
    (steps[(last.get(slot) as number) - 1] as Step).frees.push(slot);
  }
  last.clear();
}
