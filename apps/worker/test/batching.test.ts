import { describe, expect, test } from "bun:test";
import type { HostTensor } from "@xlaserve/core";
import { chooseBatchSize, concatAxis, padAxis, sliceAxis, sliceRange } from "../src/model/batch-rows.ts";
import { Coalescer } from "../src/scheduler/coalescer.ts";

const t = (shape: number[], start = 0): HostTensor => ({
  dtype: "f32",
  shape,
  data: Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, (_, i) => start + i),
});

describe("batch shapes", () => {
  test("the smallest compiled size that holds the batch", () => {
    expect(chooseBatchSize([1, 8], 1)).toBe(1);
    expect(chooseBatchSize([8, 1], 3)).toBe(8);
    expect(chooseBatchSize([1, 8], 9)).toBeUndefined();
  });
  test("pad, concatenate and slice along a leading and an inner axis", () => {
    const a = t([2, 3]);
    const b = t([1, 3], 100);
    expect(Array.from(concatAxis([a, b], 0).data as Float32Array)).toEqual([0, 1, 2, 3, 4, 5, 100, 101, 102]);
    const padded = padAxis(a, 0, 4);
    expect(padded.shape).toEqual([4, 3]);
    expect(Array.from(padded.data as Float32Array).slice(6)).toEqual([0, 0, 0, 0, 0, 0]);
    expect(Array.from(sliceAxis(padded, 0, 2).data as Float32Array)).toEqual([0, 1, 2, 3, 4, 5]);
    // inner batch axis: shape [3, n]
    const c = t([3, 2]);
    const d = t([3, 1], 50);
    const cd = concatAxis([c, d], 1);
    expect(cd.shape).toEqual([3, 3]);
    expect(Array.from(cd.data as Float32Array)).toEqual([0, 1, 50, 2, 3, 51, 4, 5, 52]);
    expect(Array.from(sliceRange(cd, 1, 2, 1).data as Float32Array)).toEqual([50, 51, 52]);
    expect(Array.from(padAxis(d, 1, 2).data as Float32Array)).toEqual([50, 0, 51, 0, 52, 0]);
  });
});

/**
 * A coalescer of one execution at a time whose first execution waits for `release()`, so the
 * requests submitted meanwhile queue; each group's ids are recorded, each answer is id x `scale`.
 */
function firstRunHeld(scale: number) {
  const groups: number[][] = [];
  const held = { release: () => {} };
  const c = new Coalescer<{ batch: number | null; id: number }, number>({
    maxBatch: 8,
    maxInFlight: 1,
    queueDepth: 100,
    label: "m",
    run: async (_v, items) => {
      groups.push(items.map((i) => i.id));
      if (groups.length === 1) await new Promise<void>((r) => (held.release = r));
      return items.map((i) => i.id * scale);
    },
  });
  return { c, groups, release: () => held.release() };
}

/**
 * A coalescer of one batch row, one execution and a queue of one, whose first run waits for
 * release(); run n answers n, or throws "boom" where failOn says.
 */
function oneSlotHeld(failOn?: number) {
  const state = { calls: 0, release: () => {} };
  const c = new Coalescer<{ batch: number | null }, number>({
    maxBatch: 1,
    maxInFlight: 1,
    queueDepth: 1,
    label: "m",
    run: async () => {
      const call = ++state.calls;
      if (call === 1) await new Promise<void>((r) => (state.release = r));
      if (call === failOn) throw new Error("boom");
      return [call];
    },
  });
  return { c, release: () => state.release(), calls: () => state.calls };
}

describe("request coalescing", () => {
  test("requests arriving during an execution leave together, in order, up to the largest batch", async () => {
    const { c, groups, release } = firstRunHeld(10);
    const first = c.submit(null, { batch: 1, id: 0 });
    const rest = [1, 2, 3, 4, 5].map((id) => c.submit(null, { batch: id === 3 ? 5 : 1, id }));
    release();
    expect(await first).toBe(0);
    expect(await Promise.all(rest)).toEqual([10, 20, 30, 40, 50]);
    // 1 + 1 + 5 = 7 rows fit; the next 1 would make 8: also fits; then 5 is alone.
    expect(groups[0]).toEqual([0]);
    expect(groups.slice(1).flat()).toEqual([1, 2, 3, 4, 5]);
    for (const g of groups.slice(1)) expect(g.length).toBeGreaterThan(0);
    await c.idle();
  });

  test("a full queue answers QUEUE_FULL; a failed execution fails only its group", async () => {
    const { c, release } = oneSlotHeld(2);
    const a = c.submit(null, { batch: 1 });
    const b = c.submit(null, { batch: 1 });
    await expect(c.submit(null, { batch: 1 })).rejects.toThrow("queue is full");
    release();
    expect(await a).toBe(1);
    await expect(b).rejects.toThrow("boom");
    expect(await c.submit(null, { batch: 1 })).toBe(3);
    await c.idle();
  });

  test("a request aborted while queued is dropped when its group forms and never runs", async () => {
    const { c, groups, release } = firstRunHeld(1);
    const first = c.submit(null, { batch: 1, id: 0 });
    const gone = new AbortController();
    const aborted = c.submit(null, { batch: 1, id: 1 }, gone.signal);
    const kept = c.submit(null, { batch: 1, id: 2 });
    gone.abort();
    release();
    expect(await first).toBe(0);
    await expect(aborted).rejects.toMatchObject({ code: "UNAVAILABLE" });
    expect(await kept).toBe(2);
    expect(groups).toEqual([[0], [2]]);
    await c.idle();
  });

  test("a full queue first drops its aborted requests; a request aborted before it runs leaves the batcher idle", async () => {
    const { c, release, calls } = oneSlotHeld();
    const a = c.submit(null, { batch: 1 });
    const gone = new AbortController();
    const queued = c.submit(null, { batch: 1 }, gone.signal);
    gone.abort();
    const b = c.submit(null, { batch: 1 }); // room once the aborted one is dropped
    await expect(queued).rejects.toMatchObject({ code: "UNAVAILABLE" });
    release();
    expect(await a).toBe(1);
    expect(await b).toBe(2);
    await c.idle();
    const early = new AbortController();
    early.abort();
    await expect(c.submit(null, { batch: 1 }, early.signal)).rejects.toMatchObject({ code: "UNAVAILABLE" });
    await c.idle(); // resolves: nothing runs, nothing waits
    expect(calls()).toBe(2);
  });
});
