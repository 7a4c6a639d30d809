import type { DType, TensorSpec } from "@xlaserve/core";

/**
 * A client-facing TensorSpec from a row-major shape where -1 marks the batch axis (the first -1)
 * and any later -1 a variable axis. Letters are made up the way a manifest would spell them
 * (column-major, "n" for the batch axis).
 */
export function spec(name: string, dtype: DType, shape: readonly number[]): TensorSpec {
  const batchAxis = shape.indexOf(-1);
  const dims = shape.map((size, axis) => ({
    kind: size >= 0 ? ("fixed" as const) : axis === batchAxis ? ("batch" as const) : ("variable" as const),
    size,
    letter: axis === batchAxis ? "n" : ("abcdefgh"[axis] ?? "z"),
  }));
  return {
    name,
    dtype,
    letters: dims
      .map((d) => d.letter)
      .reverse()
      .join(""),
    dims,
    batchAxis: batchAxis >= 0 ? batchAxis : null,
  };
}
