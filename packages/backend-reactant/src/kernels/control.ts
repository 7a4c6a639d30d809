import { XlaserveError } from "@xlaserve/core";
import type { NDArray } from "../array.ts";
import type { Op } from "@xlaserve/stablehlo";
import { type Block, type Kernel, type KernelTools, runBlock } from "../plan/program.ts";
import { type RtValue, TOKEN, isTuple } from "../plan/values.ts";
import { checkKernel } from "./check-ops.ts";
import { unsupported } from "./errors.ts";
import { whileKernel } from "./while-loop.ts";

/**
 * Control flow, composites and tuples. Regions run in the caller's frame (they read outer values
 * directly); a composite's decomposition gets a frame of its own. (func.call never reaches a
 * kernel: the plan inlines calls.)
 */
export function controlKernel(op: Op, tools: KernelTools): Kernel | null {
  const { regions, program } = tools;
  switch (op.name) {
    case "stablehlo.composite": {
      const decomposition = op.attrs.decomposition as { symbol: string } | undefined;
      if (!decomposition) throw new XlaserveError("MODULE_INVALID", "stablehlo.composite needs a decomposition");
      const f = program.func(decomposition.symbol);
      return (args, frame) => f.call(args, frame.ctx);
    }
    case "stablehlo.while": {
      const [cond, body] = regions as [Block, Block];
      return whileKernel(cond, body);
    }
    case "stablehlo.if":
      return ([pred], frame) =>
        runBlock((pred as NDArray).data[0] ? (regions[0] as Block) : (regions[1] as Block), frame, []);
    case "stablehlo.case":
      return ([index], frame) => {
        const i = Number((index as NDArray).data[0]);
        const branch = i < 0 || i >= regions.length ? regions.length - 1 : i;
        return runBlock(regions[branch] as Block, frame, []);
      };
    case "stablehlo.map": {
      // Every op of a map body is elementwise on scalars, so the body runs once over whole arrays.
      const [body] = regions as [Block];
      return (args, frame) => runBlock(body, frame, args);
    }
    case "stablehlo.tuple":
      return (args) => [{ tuple: args }];
    case "stablehlo.get_tuple_element": {
      const index = Number(op.attrs.index);
      return ([t]) => {
        if (!isTuple(t)) throw new XlaserveError("EXECUTE_FAILED", "get_tuple_element on a non-tuple");
        return [t.tuple[index] as RtValue];
      };
    }
    case "stablehlo.optimization_barrier":
      return (args) => args;
    case "stablehlo.custom_call": {
      const target = String(op.attrs.call_target_name ?? "");
      if (target.startsWith("check.")) return checkKernel(op, target);
      throw unsupported("custom_call", `custom_call target '${target}' is not supported`, { target });
    }
    case "stablehlo.after_all":
      return () => [TOKEN];
  }
  return null;
}
