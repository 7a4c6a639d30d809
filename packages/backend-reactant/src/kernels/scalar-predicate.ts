import { type ElemType, type NDArray, isComplexType, isFloatType } from "../array.ts";
import { HELPERS } from "../elem/helpers.ts";
import type { Block, Frame } from "../plan/program.ts";
import { type RtValue, isArray } from "../plan/values.ts";
import { compareExpr, loadExpr } from "./expr.ts";

/**
 * A while loop's condition evaluated on numbers: most are one compare of a scalar counter with a
 * bound (`i < n`), and running that as a block (slots bound, a one-element i1 array made and
 * counted, then dropped) costs microseconds per iteration for a nanosecond's work. Conditions
 * made only of scalar compares and boolean and/or/not over the loop state, plan constants and
 * captured scalars become one generated function of them; anything else runs as a block.
 *
 * The function is made on the first iteration, from the element types it sees, and checks them
 * on every call: it returns NOT_SCALAR where they differ, and the caller runs the block.
 */
export type ScalarPredicate = (state: RtValue[], env: (RtValue | undefined)[]) => number;

export const NOT_SCALAR = -1;

const LOGICAL: Record<string, string> = { "stablehlo.and": "&&", "stablehlo.or": "||" };

/** The predicate for `cond`, or null where the condition is not one this evaluates. */
export function scalarPredicate(cond: Block): ((state: RtValue[], frame: Frame) => ScalarPredicate | null) | null {
  if (cond.resultSlots.length !== 1) return null;
  for (const step of cond.steps) {
    const name = step.op.name;
    if (name !== "stablehlo.compare" && name !== "stablehlo.not" && LOGICAL[name] === undefined) return null;
    const t = step.op.resultTypes[0];
    if (step.outputs.length !== 1 || t === undefined || !("shape" in t) || t.shape.length !== 0) return null;
  }
  return (state, frame) => build(cond, state, frame.env);
}

function build(cond: Block, state: RtValue[], env: (RtValue | undefined)[]): ScalarPredicate | null {
  const argOf = new Map<number, number>();
  cond.argSlots.forEach((s, i) => {
    argOf.set(s, i);
  });
  const loads: string[] = [];
  const guards: string[] = [];
  /** Per slot read, the JS expression of its value (a number, a bigint or a boolean). */
  const value = new Map<number, string>();
  const types = new Map<number, ElemType>();
  const read = (slot: number): string | null => {
    const known = value.get(slot);
    if (known !== undefined) return known;
    const arg = argOf.get(slot);
    const v = arg === undefined ? env[slot] : state[arg];
    if (!isArray(v) || v.shape.length !== 0 || isComplexType(v.type)) return null;
    const name = `v${loads.length}`;
    loads.push(`const ${name} = ${arg === undefined ? `env[${slot}]` : `state[${arg}]`};`);
    guards.push(`${name}.type !== "${v.type}" || ${name}.shape.length !== 0`);
    const expr = loadExpr(v.type, `${name}.data`, "0");
    value.set(slot, expr);
    types.set(slot, v.type);
    return expr;
  };
  const body: string[] = [];
  for (const [j, step] of cond.steps.entries()) {
    const operands = step.inputs.map(read);
    if (operands.some((o) => o === null)) return null;
    const [a, b] = operands as string[];
    const name = step.op.name;
    let expr: string;
    if (name === "stablehlo.compare") {
      const t = types.get(step.inputs[0] as number);
      if (t === undefined || t !== types.get(step.inputs[1] as number)) return null;
      if (String(step.op.attrs.compare_type ?? "") === "TOTALORDER" && isFloatType(t)) return null;
      expr = compareExpr(String(step.op.attrs.comparison_direction ?? "EQ"), a as string, b as string);
    } else {
      // Boolean operands only: and/or/not of integers are bitwise.
      if (step.inputs.some((s) => types.get(s) !== "i1")) return null;
      expr = name === "stablehlo.not" ? `!(${a})` : `(${a} ${LOGICAL[name]} ${b})`;
    }
    const out = step.outputs[0] as number;
    body.push(`const r${j} = ${expr};`);
    value.set(out, `r${j}`);
    types.set(out, "i1");
  }
  const result = read(cond.resultSlots[0] as number);
  if (result === null || types.get(cond.resultSlots[0] as number) !== "i1") return null;
  const source = `${loads.join("\n")}
if (${guards.length > 0 ? guards.join(" || ") : "false"}) return ${NOT_SCALAR};
${body.join("\n")}
return ${result} ? 1 : 0;`;
  const f = new Function("state", "env", "H", source) as (
    s: RtValue[],
    e: (RtValue | undefined)[],
    h: typeof HELPERS,
  ) => number;
  return (s, e) => f(s, e, HELPERS);
}

/** The value of a scalar predicate array (what a condition block returns). */
export function predicateValue(p: RtValue | undefined): boolean {
  return Boolean((p as NDArray).data[0]);
}
