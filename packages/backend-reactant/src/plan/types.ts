import type { Op } from "@xlaserve/stablehlo";
import type { Arena } from "./arena.ts";
import type { Program } from "./program.ts";
import type { StepTimes } from "./step-times.ts";
import type { CheckFailure, RtValue } from "./values.ts";

/**
 * The shapes of an execution plan: every function compiled into blocks of steps over numbered
 * slots, and what a step's kernel gets when it runs.
 */

export interface ExecContext {
  readonly arena: Arena;
  readonly failures: CheckFailure[];
  /** When set, time spent per op name is added here (the per-op profile of bench/). */
  readonly profile?: Map<string, OpTime>;
  /** When set, each step's exclusive time (nested blocks' steps not counted twice). */
  readonly steps?: StepTimes;
}

export interface OpTime {
  ms: number;
  count: number;
}

/** One activation of a function: its slots, and which of them hold the plan's constants. */
export interface Frame {
  readonly env: (RtValue | undefined)[];
  readonly ctx: ExecContext;
  /** 1 where the slot holds a folded constant: never freed nor counted per run. */
  readonly constant: Uint8Array;
}

export type Kernel = (args: RtValue[], frame: Frame) => RtValue[];

export interface Step {
  readonly op: Op;
  /** Name in the per-op profile when not the op's own (fused steps). */
  readonly label?: string;
  readonly inputs: number[];
  readonly outputs: number[];
  readonly kernel: Kernel;
  readonly frees: number[];
  /**
   * Inputs whose slots this step clears before its kernel runs (plan/ownership.ts): a while
   * loop's operands that die here, so its body holds the only count on them.
   */
  moves?: number[];
  /** Inputs the step's regions do not read from outside (capture): candidates for `moves`. */
  movable?: number[];
}

export interface Block {
  readonly argSlots: number[];
  readonly steps: Step[];
  readonly resultSlots: number[];
  /** Result slots cleared as the block returns (plan/ownership.ts): the caller holds the values. */
  readonly handOver: number[];
  /** 1 per argument the block reads; the others are never bound, so they hold no count. */
  readonly argUsed: Uint8Array;
  /** Slots of enclosing blocks this block reads. */
  readonly captures: Set<number>;
}

/** What kernels with regions or calls get at compile time. */
export interface KernelTools {
  readonly regions: Block[];
  readonly program: Program;
}
