import { blockRunner } from "../plan/block-runner.ts";
import { type Block, type Kernel, release, retain } from "../plan/program.ts";
import type { RtValue } from "../plan/values.ts";
import { NOT_SCALAR, type ScalarPredicate, predicateValue, scalarPredicate } from "./scalar-predicate.ts";

/**
 * stablehlo.while. The body and the condition run as generated block functions (block-runner.ts),
 * and a condition of scalar compares as a function of numbers (scalar-predicate.ts), so what an
 * iteration costs beyond its kernels is a few slot writes and counts.
 */
export function whileKernel(cond: Block, body: Block): Kernel {
  const runCond = blockRunner(cond);
  const runBody = blockRunner(body);
  const makePredicate = scalarPredicate(cond);
  let predicate: ScalarPredicate | null = null;
  let triedPredicate = makePredicate === null;
  return (args, frame) => {
    const arena = frame.ctx.arena;
    const env = frame.env;
    // A while among the entry block's steps holds, between iterations, only its state
    // uncounted: with that counted for a moment, what the last iteration dropped can go back
    // to the pool, so the next one reuses it instead of allocating afresh (arena.ts).
    const recycle = arena.depth === 1;
    // Profiled runs time the condition's steps one by one, as before.
    const direct = frame.ctx.profile === undefined && frame.ctx.steps === undefined;
    let state = args;
    for (;;) {
      if (!triedPredicate && makePredicate !== null) {
        predicate = makePredicate(state, frame);
        triedPredicate = true;
      }
      const p = direct && predicate !== null ? predicate(state, env) : NOT_SCALAR;
      if (p === NOT_SCALAR) {
        if (!predicateValue(runCond(frame, state)[0])) return state;
      } else if (p === 0) return state;
      state = runBody(frame, state);
      if (recycle) keepWhileFlushing(arena, state);
    }
  };
}

function keepWhileFlushing(arena: Parameters<typeof retain>[0], state: RtValue[]): void {
  for (let i = 0; i < state.length; i++) retain(arena, state[i]);
  arena.flush();
  for (let i = 0; i < state.length; i++) release(arena, state[i]);
}
