import { type ElemType, type NDArray, type ReducerKind, type RegionInfo, type Scalar, alloc } from "../array.ts";
import { readScalar, writeScalar } from "../elem/scalar.ts";
import type { Region } from "@xlaserve/stablehlo";
import { isTensorType } from "@xlaserve/stablehlo";
import { type Block, type Frame, runBlock } from "../plan/program.ts";

/**
 * Regions as kernels see them (array.ts's RegionInfo): a batched form that evaluates the
 * region over whole arrays at once (every op in a region is elementwise on its scalars, so the
 * same block runs unchanged on arrays), a scalar form, and the recognised fast-path reducer.
 * What depends only on the region (argument types, the reducer) is worked out once, when the
 * op's kernel is built; each run only binds its frame.
 */
export function regionInfoFor(block: Block, region: Region): (frame: Frame) => RegionInfo {
  const argTypes: ElemType[] = region.args.map((a) => (isTensorType(a.type) ? a.type.elem : "f32"));
  const reducer = reducerKind(region);
  return (frame) => {
    const batched = (args: NDArray[]): NDArray[] => runBlock(block, frame, args) as NDArray[];
    const fn = (scalars: Scalar[]): Scalar[] => {
      const arrays = scalars.map((s, i) => {
        const a = alloc(argTypes[i] ?? "f32", []);
        writeScalar(a, 0, s);
        return a;
      });
      return batched(arrays).map((r) => readScalar(r, 0));
    };
    return { fn, batched, reducer };
  };
}

const REDUCERS: Record<string, ReducerKind> = {
  "stablehlo.add": "add",
  "stablehlo.multiply": "mul",
  "stablehlo.maximum": "max",
  "stablehlo.minimum": "min",
  "stablehlo.and": "and",
  "stablehlo.or": "or",
  "stablehlo.xor": "xor",
};

/** `^bb0(%a, %b): %r = op %a, %b; return %r` with op commutative: a fast-path reducer. */
export function reducerKind(region: Region): ReducerKind {
  if (region.args.length !== 2 || region.ops.length !== 2) return null;
  const [body, ret] = region.ops;
  if (!body || !ret || ret.operands.length !== 1 || ret.operands[0] !== body.results[0]) return null;
  const kind = REDUCERS[body.name];
  if (!kind) return null;
  const names = new Set(body.operands);
  const [a, b] = region.args;
  if (names.size !== 2 || !a || !b || !names.has(a.name) || !names.has(b.name)) return null;
  return kind;
}
