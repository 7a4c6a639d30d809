import { type NDArray, type TypedArray, elementCount } from "../array.ts";
import { lastTypeTaker } from "../plan/arena.ts";
import type { Kernel } from "../plan/program.ts";
import type { InPlaceKernel } from "../plan/ownership.ts";
import { type BlockRows, blockRows, boxOffset, copyRuns, fits } from "./block-rows.ts";
import { executeFailed } from "./errors.ts";
import { checkSliceSizes } from "./layout.ts";

/**
 * dynamic_slice and dynamic_update_slice as copies of contiguous runs (block-rows.ts): inside a
 * loop they move a row or a few rows of a carried buffer every iteration, and per-element index
 * arithmetic cost more than the copy.
 */

export function dynamicSliceKernel(sizes: number[]): Kernel {
  const take = lastTypeTaker();
  let rows: BlockRows | null = null;
  const count = elementCount(sizes);
  return (args, frame) => {
    const x = args[0] as NDArray;
    if (!fits(rows, x.shape, sizes)) {
      checkSliceSizes(x, sizes);
      rows = blockRows(x.shape, sizes);
    }
    const geometry = rows as BlockRows;
    const out = take(x.type)(frame.ctx.arena, count);
    copyRuns(geometry, x.type, x.data, out, boxOffset(geometry, args, 1), false);
    return [{ type: x.type, shape: [...sizes], data: out }];
  };
}

/** With `operandDies` (plan/ownership.ts) and the operand's storage solely owned, the update is in place. */
export function dynamicUpdateSliceKernel(): InPlaceKernel {
  const take = lastTypeTaker();
  let rows: BlockRows | null = null;
  const kernel: InPlaceKernel = (args, frame) => {
    const x = args[0] as NDArray;
    const update = args[1] as NDArray;
    if (!fits(rows, x.shape, update.shape)) {
      checkUpdateShape(x, update);
      rows = blockRows(x.shape, update.shape);
    }
    const geometry = rows as BlockRows;
    const arena = frame.ctx.arena;
    let out: TypedArray;
    if (kernel.operandDies === true && arena.soleOwner(x.data)) out = x.data;
    else {
      // A pooled array filled by one native copy, not a fresh one zeroed first.
      out = take(x.type)(arena, elementCount(x.shape));
      (out as Float64Array).set(x.data as Float64Array);
    }
    copyRuns(geometry, x.type, out, update.data, boxOffset(geometry, args, 2), true);
    return [{ type: x.type, shape: [...x.shape], data: out }];
  };
  return kernel;
}

function checkUpdateShape(x: NDArray, update: NDArray): void {
  if (update.type !== x.type) {
    throw executeFailed("dynamic_update_slice", `update of ${update.type} into an operand of ${x.type}`);
  }
  if (update.shape.length !== x.shape.length || update.shape.some((u, d) => u > (x.shape[d] as number))) {
    throw executeFailed("dynamic_update_slice", `update [${update.shape}] does not fit operand [${x.shape}]`);
  }
}
