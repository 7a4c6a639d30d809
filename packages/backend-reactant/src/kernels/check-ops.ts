import { XlaserveError } from "@xlaserve/core";
import type { NDArray } from "../array.ts";
import type { Op } from "@xlaserve/stablehlo";
import type { Kernel } from "../plan/program.ts";
import { type CheckKind, runCheck } from "./checks.ts";
import { unsupported } from "./errors.ts";

/**
 * Check ops: the `check.expect_*` custom calls of the conformance programs and the check
 * dialect (`check.expect_eq_const %x, dense<...>`). A failed check is recorded in the run's
 * context (the run goes on, as in the reference interpreter); it never throws.
 */
export function checkKernel(op: Op, target = op.name): Kernel {
  const name = target.replace(/^check\./, "");
  const constant = name.endsWith("_const");
  const base = constant ? name.slice(0, -"_const".length) : name;
  const kinds: Record<string, CheckKind> = { expect_eq: "eq", expect_close: "close", expect_almost_eq: "almost_eq" };
  const kind = kinds[base];
  if (!kind) throw unsupported(target, `check ${target} is not supported`);
  const expectedConst = op.attrs.value as NDArray | undefined;
  if (constant && !expectedConst) throw new XlaserveError("MODULE_INVALID", `${target} needs a dense expected value`);
  const options = {
    maxUlp: op.attrs.max_ulp_difference === undefined ? undefined : Number(op.attrs.max_ulp_difference),
    tolerance: op.attrs.tolerance === undefined ? undefined : Number(op.attrs.tolerance),
  };
  return (args, frame) => {
    const actual = args[0] as NDArray;
    const expected = constant ? (expectedConst as NDArray) : (args[1] as NDArray);
    const message = runCheck(kind, actual, expected, options);
    if (message !== null) frame.ctx.failures.push({ check: target, message });
    return [];
  };
}
