import type { Block, Kernel, Step } from "./program.ts";

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
 * A while loop's operands go to its body as the first iteration's arguments. Where an operand's
 * slot dies at the loop, the slot lets go of it before the loop runs (Step.moves), so the body's
 * argument is the value's only holder and an update of a carried buffer is in place from the
 * first iteration on, not after a first copy. Operands a region also reads directly from the
 * enclosing block (a capture) keep their slot.
 */
export function movableInputs(inputs: number[], regions: Block[]): number[] {
  const captured = new Set<number>();
  for (const r of regions) for (const c of r.captures) captured.add(c);
  return [...new Set(inputs)].filter((s) => !captured.has(s));
}

/** Sets Step.moves: the movable inputs whose slots the step frees. */
export function markMovedOperands(steps: Step[]): void {
  for (const step of steps) {
    if (!step.movable) continue;
    const moves = step.movable.filter((s) => step.frees.includes(s));
    if (moves.length > 0) step.moves = moves;
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
