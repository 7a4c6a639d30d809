import type { Kernel, Step } from "./program.ts";

/**
 * Which updates may write into their operand's storage, decided from the plan's liveness: an
 * operand slot that this step frees is dead afterwards, so no later step of the block reads the
 * old value. The kernel still asks the arena, when it runs, whether that slot is the storage's
 * only holder (a reshape view, a device buffer, the caller's slot for a loop's first iteration
 * or a plan constant can share it); only then does it write in place.
 */

/** A kernel that can update its first operand in place where the plan says the operand dies. */
export interface InPlaceKernel extends Kernel {
  operandDies?: boolean;
}

/** Ops whose first operand, if dead after them and solely owned, can become their result. */
const UPDATES_OPERAND = new Set(["stablehlo.dynamic_update_slice", "stablehlo.scatter"]);

/** Marks each in-place-capable step whose first operand dies at it (and is not also read as another input). */
export function markDyingOperands(steps: Step[]): void {
  for (const step of steps) {
    if (!UPDATES_OPERAND.has(step.op.name)) continue;
    const operand = step.inputs[0];
    if (operand === undefined || !step.frees.includes(operand)) continue;
    if (step.inputs.indexOf(operand, 1) >= 0) continue;
    (step.kernel as InPlaceKernel).operandDies = true;
  }
}

/**
 * The result slots a block hands over to its caller instead of keeping: its own slots (not
 * outer captures, not constants), each once. Kept, they would hold a second count on a loop's
 * carried buffers from one iteration to the next, and no update could ever be in place.
 */
export function handOverSlots(
  resultSlots: number[],
  locals: { has(slot: number): boolean },
  constants: Map<number, unknown>,
): number[] {
  return [...new Set(resultSlots)].filter((s) => locals.has(s) && !constants.has(s));
}

/** Per argument, 1 where the block reads it (a step, a nested region or its results); unread arguments are not bound. */
export function usedArguments(argSlots: number[], uses: number[][], resultSlots: number[]): Uint8Array {
  const read = new Set<number>([...uses.flat(), ...resultSlots]);
  return Uint8Array.from(argSlots, (s) => (read.has(s) ? 1 : 0));
}
