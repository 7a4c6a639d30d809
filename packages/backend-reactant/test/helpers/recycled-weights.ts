/**
 * Rounds of weight uploads that land in recycled arena storage: each round uploads new weights,
 * runs the program a few times and checks every output, then disposes the weights and runs
 * `flush` (released storage joins the pool when a run ends), so the next round's upload can
 * reuse the same storage object. A cache keyed on the storage alone would then serve the old
 * weights. Returns how many rounds got the previous round's storage (a test expects some).
 */
import { expect } from "bun:test";
import type { DeviceBuffer, Executable, HostTensor } from "@xlaserve/core";
import type { createReactantBackend } from "../../src/index.ts";

type Backend = ReturnType<typeof createReactantBackend>;

export async function recycledWeightRounds(
  b: Backend,
  exe: Executable,
  flush: Executable,
  xb: DeviceBuffer,
  weights: (round: number) => HostTensor,
  expected: (w: HostTensor) => number[],
): Promise<number> {
  let recycled = 0;
  let previous: unknown = null;
  for (let round = 0; round < 4; round++) {
    const w = weights(round);
    const wb = await b.upload(w);
    const storage = (wb as unknown as { value: { data: unknown } }).value.data;
    if (storage === previous) recycled++;
    previous = storage;
    for (let run = 0; run < 3; run++) {
      const [out] = await b.execute(exe, [xb, wb]);
      const host = await b.download(out as NonNullable<typeof out>);
      expect(Array.from(host.data as ArrayLike<number>)).toEqual(expected(w));
      out?.dispose();
    }
    wb.dispose();
    for (const o of await b.execute(flush, [xb])) o.dispose();
  }
  return recycled;
}
