import { release, retain, runBlock, stepError } from "./run-block.ts";
import type { Block, Frame } from "./types.ts";
import type { RtValue } from "./values.ts";

/** Runs a block in a frame, as runBlock does. */
export type BlockRun = (frame: Frame, args: RtValue[]) => RtValue[];

/**
 * A block that runs many times (a loop's body and condition) as one function generated for it:
 * every slot number, which arguments are bound, which slots each step frees or moves and which
 * of them hold plan constants are written into the code, so a run does only the loads, the
 * kernel calls and the counting that runBlock would do, without walking the step records.
 * The slot semantics are runBlock's exactly (run-block.ts); when the run is profiled the block
 * goes through runBlock, which times each step.
 */
export function blockRunner(block: Block): BlockRun {
  let compiled: BlockRun | null = null;
  return (frame, args) => {
    if (frame.ctx.profile !== undefined || frame.ctx.steps !== undefined) return runBlock(block, frame, args);
    // Made on the first run: which slots hold constants is a fact of the frame's function.
    if (compiled === null) compiled = generate(block, frame.constant);
    return compiled(frame, args);
  };
}

function generate(block: Block, constant: Uint8Array): BlockRun {
  const lines: string[] = [];
  const release1 = (slot: number) =>
    `{ const p = env[${slot}]; if (p !== undefined) { env[${slot}] = undefined; release(arena, p); } }`;
  const set = (slot: number, value: string) =>
    `{ const v = ${value}; ${constant[slot] ? "" : `const p = env[${slot}]; if (p !== undefined) release(arena, p); `}env[${slot}] = v; retain(arena, v); }`;
  block.argSlots.forEach((slot, i) => {
    if (block.argUsed[i]) lines.push(set(slot, `args[${i}]`));
  });
  block.steps.forEach((step, i) => {
    lines.push(`at = ${i};`);
    lines.push(`ins = [${step.inputs.map((s) => `env[${s}]`).join(", ")}];`);
    for (const s of step.moves ?? []) if (!constant[s]) lines.push(release1(s));
    lines.push(`outs = k${i}(ins, frame);`);
    step.outputs.forEach((s, k) => {
      lines.push(set(s, `outs[${k}]`));
    });
    for (const s of step.frees) if (!constant[s]) lines.push(release1(s));
    lines.push("if (outermost) arena.flush();");
  });
  lines.push(`const results = [${block.resultSlots.map((s) => `env[${s}]`).join(", ")}];`);
  lines.push("at = -1;");
  // Handed over uncounted, as runBlock does: the caller's slots count them.
  for (const s of block.handOver) lines.push(release1(s));
  lines.push("return results;");
  const kernels = block.steps.map((_, i) => `const k${i} = steps[${i}].kernel;`).join("\n");
  const source = `${kernels}
return function run(frame, args) {
  const env = frame.env;
  const arena = frame.ctx.arena;
  const outermost = arena.depth === 0;
  arena.depth++;
  let at = -1;
  let ins;
  let outs;
  try {
    ${lines.join("\n    ")}
  } catch (e) {
    if (at < 0) throw e;
    throw stepError(steps[at].op, e);
  } finally {
    arena.depth--;
  }
};`;
  const make = new Function("steps", "retain", "release", "stepError", source);
  return make(block.steps, retain, release, stepError) as BlockRun;
}
