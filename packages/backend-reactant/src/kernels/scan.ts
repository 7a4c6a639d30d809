import type { NDArray } from "../array.ts";
import { type Block, type Frame, runBlock } from "../plan/program.ts";
import { concatenate, reshape, slice } from "./layout.ts";

/**
 * chlo.scan: walks `dim` (backwards when reverse), calling the body with (input slices...,
 * carries...) and getting (output slices..., new carries...). Results: the outputs stacked
 * along `dim`, then the final carries.
 */
export function scan(
  args: NDArray[],
  inputCount: number,
  dim: number,
  reverse: boolean,
  body: Block,
  frame: Frame,
): NDArray[] {
  const inputs = args.slice(0, inputCount);
  let carries = args.slice(inputCount);
  const shape = (inputs[0] as NDArray).shape;
  const length = shape[dim] as number;
  const sliceShape = shape.filter((_, d) => d !== dim);
  const pieces: NDArray[][] = [];
  for (let step = 0; step < length; step++) {
    const k = reverse ? length - 1 - step : step;
    const slices = inputs.map((x) =>
      reshape(
        slice(
          x,
          shape.map((_, d) => (d === dim ? k : 0)),
          shape.map((s, d) => (d === dim ? k + 1 : s)),
          shape.map(() => 1),
        ),
        sliceShape,
      ),
    );
    const results = runBlock(body, frame, [...slices, ...carries]) as NDArray[];
    const outputs = results.slice(0, results.length - carries.length);
    carries = results.slice(outputs.length);
    pieces[k] = outputs.map((o) => reshape(o, [...o.shape.slice(0, dim), 1, ...o.shape.slice(dim)]));
  }
  const outputCount = pieces[0]?.length ?? 0;
  const stacked = Array.from({ length: outputCount }, (_, i) =>
    concatenate(
      pieces.map((p) => p[i] as NDArray),
      dim,
    ),
  );
  return [...stacked, ...carries];
}
