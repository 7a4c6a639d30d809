import type { HostTensor } from "@xlaserve/core";
import { XlaserveError, noteMovable } from "@xlaserve/core";
import { chooseBatchSize, concatAxis, padAxis, sliceRange } from "./batch-rows.ts";
import { joinRowsLater } from "./joined-rows.ts";
import type { ModelPrograms } from "./model-programs.ts";
import type { LoadedProgram } from "./program-types.ts";

/** One request in a planned execution. */
export interface BatchItem {
  readonly inputs: ReadonlyMap<string, HostTensor>;
  /** Its rows along the batch axis; null for a model without one. */
  readonly batch: number | null;
}

/** What one execution runs: the program, its inputs (joined and padded) and how its outputs split back. */
export interface BatchPlan {
  readonly program: LoadedProgram;
  /** The compiled batch size it runs at. */
  readonly size: number;
  /** The rows its requests bring (before padding): the statistics' batch size. */
  readonly rows: number;
  inputsFor(): HostTensor[];
  split(results: readonly HostTensor[]): Map<string, HostTensor>[];
}

/**
 * Requests of one variant as a single execution: their inputs concatenated along the batch axis
 * and zero-padded up to `size` (default: the smallest compiled size that holds them all); every
 * output with a batch axis is cut back into each request's rows. One request is the common case.
 */
export function planBatch(
  programs: ModelPrograms,
  modelName: string,
  variant: number | null,
  items: readonly BatchItem[],
  size?: number,
): BatchPlan {
  const batched = items.every((i) => i.batch !== null);
  const total = batched ? items.reduce((a, i) => a + (i.batch ?? 0), 0) : null;
  if (!batched && items.length !== 1) throw new XlaserveError("INTERNAL", "only batched requests are coalesced");
  const chosen =
    size ??
    (total === null ? (programs.compiledBatchSizes[0] ?? 1) : chooseBatchSize(programs.compiledBatchSizes, total));
  if (chosen === undefined || (total !== null && chosen < total)) {
    throw new XlaserveError(
      "INVALID_ARGUMENT",
      `model "${modelName}": batch ${total} exceeds the largest compiled batch size ${programs.maxBatchSize}`,
    );
  }
  const { program } = programs.programFor(variant, chosen);
  const inputsFor = (): HostTensor[] =>
    programs.inputs.map((spec) => {
      const parts = items.map((item) => {
        const t = item.inputs.get(spec.name);
        if (!t) throw new XlaserveError("INVALID_ARGUMENT", `model "${modelName}": missing input "${spec.name}"`);
        return t;
      });
      if (spec.batchAxis === null || total === null) return parts[0] as HostTensor;
      const one = parts.length === 1 ? (parts[0] as HostTensor) : null;
      if (one && one.shape[spec.batchAxis] === chosen) return one;
      // Along the leading axis the rows are joined where the inputs are read (joined-rows.ts).
      if (spec.batchAxis === 0) return joinRowsLater(parts, chosen);
      const joined = one ? padAxis(one, spec.batchAxis, chosen) : concatAxis(parts, spec.batchAxis, chosen);
      // Allocated for this execution alone: the engine thread may take it without a copy.
      if (joined !== one) noteMovable(joined.data.buffer);
      return joined;
    });
  const split = (results: readonly HostTensor[]): Map<string, HostTensor>[] => {
    const outs = items.map(() => new Map<string, HostTensor>());
    for (let o = 0; o < programs.outputs.length; o++) {
      const spec = programs.outputs[o];
      const host = results[o];
      if (!spec || !host) continue;
      let offset = 0;
      items.forEach((item, k) => {
        const rows = item.batch;
        const mine =
          spec.batchAxis === null || rows === null || total === null
            ? host
            : items.length === 1 && rows === chosen
              ? host
              : sliceRange(host, spec.batchAxis, offset, rows);
        outs[k]?.set(spec.name, mine);
        offset += rows ?? 0;
      });
    }
    return outs;
  };
  return { program, size: chosen, rows: total ?? 1, inputsFor, split };
}
