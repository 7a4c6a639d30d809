import { describe, expect, test } from "bun:test";
import { chooseBatch, targetRows } from "../src/scheduler/batch-choice.ts";
import { DeviceScheduler, type SchedulerOptions, chargedFrom } from "../src/scheduler/device-scheduler.ts";
import { FairShare, REMEASURE_AFTER_MS } from "../src/scheduler/fair-share.ts";
import type { QueuePolicy } from "../src/scheduler/model-queue.ts";

const rows = (...r: number[]) => r.map((n) => ({ variant: null, rows: n }));
const B1_8 = { compiledBatchSizes: [1, 8] };
const B1_2_4_8 = { compiledBatchSizes: [1, 2, 4, 8] };

describe("coalescing rule", () => {
  test("the largest compiled size the queue fills; the rest waits", () => {
    expect(chooseBatch(rows(1, 1, 1, 1, 1, 1, 1, 1, 1), B1_8)).toEqual({ size: 8, take: 8, rows: 8 });
    expect(chooseBatch(rows(1, 1, 1), B1_2_4_8)).toEqual({ size: 2, take: 2, rows: 2 });
    expect(chooseBatch(rows(3, 3), B1_2_4_8)).toEqual({ size: 4, take: 1, rows: 3 });
  });
  test("a request is never split: one over the fillable size grows it to the smallest that holds it", () => {
    expect(chooseBatch(rows(5), B1_8)).toEqual({ size: 8, take: 1, rows: 5 });
    expect(chooseBatch(rows(5, 5), B1_8)).toEqual({ size: 8, take: 1, rows: 5 });
  });
  test("below every compiled size, the smallest, padded", () => {
    expect(chooseBatch(rows(1), { compiledBatchSizes: [4, 8] })).toEqual({ size: 4, take: 1, rows: 1 });
    expect(chooseBatch(rows(2, 1), { compiledBatchSizes: [4, 8] })).toEqual({ size: 4, take: 2, rows: 3 });
  });
  test("maxRows caps the rows coalesced; preferred sizes win when the queue fills one", () => {
    expect(chooseBatch(rows(1, 1, 1, 1, 1, 1, 1, 1), { ...B1_2_4_8, maxRows: 4 })).toEqual({
      size: 4,
      take: 4,
      rows: 4,
    });
    expect(chooseBatch(rows(1, 1, 1, 1, 1, 1, 1, 1), { ...B1_2_4_8, preferred: [2] })).toEqual({
      size: 2,
      take: 2,
      rows: 2,
    });
    // a preferred size that is no compiled size is ignored
    expect(chooseBatch(rows(1, 1, 1), { ...B1_2_4_8, preferred: [3] })).toEqual({ size: 2, take: 2, rows: 2 });
    expect(targetRows({ ...B1_2_4_8, preferred: [4, 2] })).toBe(2);
    expect(targetRows({ ...B1_2_4_8, maxRows: 4 })).toBe(4);
  });
  test("only the front's variant leads, and a request without a batch axis runs alone", () => {
    const mixed = [
      { variant: 0, rows: 1 },
      { variant: 0, rows: 1 },
      { variant: 1, rows: 1 },
      { variant: 0, rows: 1 },
    ];
    expect(chooseBatch(mixed, B1_2_4_8)).toEqual({ size: 2, take: 2, rows: 2 });
    expect(chooseBatch([{ variant: null, rows: null }], B1_8)).toEqual({ size: undefined, take: 1, rows: 0 });
  });
  test("with measured costs, the size that runs the most rows per second, padding included", () => {
    const B1_32 = { compiledBatchSizes: [1, 32] };
    const costs = (table: Record<number, number>) => (size: number) => table[size];
    const twenty = rows(...Array.from({ length: 20 }, () => 1));
    // Twenty rows: one run at 32 (5 ms) beats twenty at 1 (1 ms each); the fill rule alone takes 1.
    expect(chooseBatch(twenty, B1_32)).toEqual({ size: 1, take: 1, rows: 1 });
    expect(chooseBatch(twenty, B1_32, costs({ 1: 0.001, 32: 0.005 }))).toEqual({ size: 32, take: 20, rows: 20 });
    // Where padding costs more than the rows it carries are worth, the fill size stays.
    expect(chooseBatch(rows(1, 1), B1_32, costs({ 1: 0.001, 32: 0.005 }))).toEqual({ size: 1, take: 1, rows: 1 });
    expect(chooseBatch(rows(1, 1, 1), B1_2_4_8, costs({ 1: 1, 2: 1.5, 4: 1.6, 8: 3 }))).toEqual({
      size: 4,
      take: 3,
      rows: 3,
    });
    // An unmeasured size that would carry more rows runs once (to be measured); one that would not is skipped.
    expect(chooseBatch(twenty, B1_32, costs({ 1: 0.001 }))).toEqual({ size: 32, take: 20, rows: 20 });
    expect(chooseBatch(rows(1), B1_32, costs({ 1: 0.001 }))).toEqual({ size: 1, take: 1, rows: 1 });
    // Preferred sizes and maxRows still bound the choice.
    expect(chooseBatch(twenty, { ...B1_32, maxRows: 8 }, costs({ 1: 0.001, 32: 0.005 }))).toEqual({
      size: 32,
      take: 8,
      rows: 8,
    });
    expect(chooseBatch(twenty, { ...B1_2_4_8, preferred: [2] }, costs({ 1: 1, 2: 1, 4: 1, 8: 1 }))).toEqual({
      size: 2,
      take: 2,
      rows: 2,
    });
  });
});

const OPTIONS: SchedulerOptions = {
  discipline: "fifo",
  maxInFlight: 1,
  maxQueued: 0,
  defaultPriority: 100,
  emaHalfLifeMs: 1000,
  costAlpha: 1,
  fairnessCap: 1,
};

function policy(over: Partial<QueuePolicy> = {}): QueuePolicy {
  return {
    ...B1_8,
    coalesce: true,
    maxInFlight: 1,
    queueDepth: 16,
    maxQueueDelayMs: 0,
    weight: 1,
    sizeChoice: "fill",
    ...over,
  };
}

/**
 * A scheduler whose executions wait for `release()` (each answers its payloads doubled after
 * `runMs`), recording every execution's payloads and size.
 */
function harness(options: Partial<SchedulerOptions> = {}, runMs: (model: string) => number = () => 0) {
  const s = new DeviceScheduler({ ...OPTIONS, ...options });
  const runs: { model: string; payloads: number[]; size: number | undefined }[] = [];
  let gate: Promise<void> = Promise.resolve();
  let open = () => {};
  const hold = () => {
    gate = new Promise<void>((r) => {
      open = r;
    });
  };
  const queue = (name: string, p: Partial<QueuePolicy> = {}) =>
    s.register<number, number>(`model "${name}"`, policy(p), async (_variant, payloads, size) => {
      runs.push({ model: name, payloads: [...payloads], size });
      await gate;
      if (runMs(name) > 0) await Bun.sleep(runMs(name));
      if (payloads.includes(-1)) throw new Error("boom");
      return payloads.map((x) => x * 2);
    });
  return { s, runs, hold, release: () => open(), queue };
}

describe("device scheduler", () => {
  test("queued requests leave together at a compiled size, each with its own answer", async () => {
    const { s, runs, hold, release, queue } = harness();
    const q = queue("a");
    hold();
    const first = s.submit(q, { variant: null, rows: 1, payload: 1 });
    const rest = [2, 3, 4, 5, 6, 7, 8, 9].map((p) => s.submit(q, { variant: null, rows: 1, payload: p }));
    expect(q.figures().queued).toBe(8);
    release();
    expect(await Promise.all([first, ...rest])).toEqual([2, 4, 6, 8, 10, 12, 14, 16, 18]);
    expect(runs.map((r) => [r.payloads.length, r.size])).toEqual([
      [1, 1],
      [8, 8],
    ]);
    await q.idle();
  });

  test("a failed execution fails only its own requests; a full queue is QUEUE_FULL at once", async () => {
    const { s, hold, release, queue } = harness();
    const q = queue("a", { queueDepth: 2, maxRows: 1 });
    hold();
    const first = s.submit(q, { variant: null, rows: 1, payload: 1 });
    const bad = s.submit(q, { variant: null, rows: 1, payload: -1 });
    const good = s.submit(q, { variant: null, rows: 1, payload: 3 });
    await expect(s.submit(q, { variant: null, rows: 1, payload: 4 })).rejects.toMatchObject({ code: "QUEUE_FULL" });
    release();
    expect(await first).toBe(2);
    await expect(bad).rejects.toThrow("boom");
    expect(await good).toBe(6);
    expect(q.figures().shed.queueFull).toBe(1);
  });

  test("an aborted request is dropped at its turn and never runs; a full queue drops aborted ones first", async () => {
    const { s, runs, hold, release, queue } = harness();
    const q = queue("a", { queueDepth: 1 });
    hold();
    const first = s.submit(q, { variant: null, rows: 1, payload: 1 });
    const ac = new AbortController();
    const gone = s.submit(q, { variant: null, rows: 1, payload: 2, signal: ac.signal });
    ac.abort();
    const next = s.submit(q, { variant: null, rows: 1, payload: 3 });
    await expect(gone).rejects.toThrow("aborted while queued");
    release();
    expect(await Promise.all([first, next])).toEqual([2, 6]);
    expect(runs.flatMap((r) => r.payloads)).toEqual([1, 3]);
    await q.idle();
  });

  test("priority levels: a lower level leaves first, arrival order within a level", async () => {
    const { s, runs, hold, release, queue } = harness();
    const q = queue("a", { coalesce: false });
    hold();
    const all = [
      s.submit(q, { variant: null, rows: 1, payload: 1 }),
      s.submit(q, { variant: null, rows: 1, payload: 2, priority: 200 }),
      s.submit(q, { variant: null, rows: 1, payload: 3 }),
      s.submit(q, { variant: null, rows: 1, payload: 4, priority: 5 }),
    ];
    release();
    await Promise.all(all);
    expect(runs.map((r) => r.payloads[0])).toEqual([1, 4, 3, 2]);
  });

  test("fair: a model's weight is its share; the one that used less than its share goes next", async () => {
    const { s, runs, hold, release, queue } = harness({ discipline: "fair" }, () => 2);
    const heavy = queue("heavy", { coalesce: false });
    const light = queue("light", { coalesce: false, weight: 3 });
    // heavy has used the device; then both queue
    await s.submit(heavy, { variant: null, rows: 1, payload: 0 });
    hold();
    const h = [1, 2, 3].map((p) => s.submit(heavy, { variant: null, rows: 1, payload: p }));
    const l = [10, 11].map((p) => s.submit(light, { variant: null, rows: 1, payload: p }));
    release();
    await Promise.all([...h, ...l]);
    // the first heavy request was dispatched before the light ones arrived; then light is owed
    expect(runs.map((r) => r.model)).toEqual(["heavy", "heavy", "light", "light", "heavy", "heavy"]);
  });

  test("edf: the queue holding the earliest deadline goes first, its requests in arrival order", async () => {
    const { s, runs, hold, release, queue } = harness({ discipline: "edf" });
    const a = queue("a", { coalesce: false });
    const b = queue("b", { coalesce: false });
    hold();
    const blocker = s.submit(a, { variant: null, rows: 1, payload: 0 });
    const far = s.submit(a, { variant: null, rows: 1, payload: 1, deadline: performance.now() + 60_000 });
    const none = s.submit(b, { variant: null, rows: 1, payload: 2 });
    const soon = s.submit(b, { variant: null, rows: 1, payload: 3, deadline: performance.now() + 30_000 });
    release();
    await Promise.all([blocker, far, none, soon]);
    // b holds the earliest deadline: its front (no deadline) and then the one with it, then a
    expect(runs.map((r) => r.payloads[0])).toEqual([0, 2, 3, 1]);
  });

  test("edf sheds a request its execution's learned cost would make late, before running it", async () => {
    const { s, runs, hold, release, queue } = harness({ discipline: "edf" }, (m) => (m === "slow" ? 30 : 0));
    const slow = queue("slow", { coalesce: false });
    const other = queue("other", { coalesce: false });
    await s.submit(slow, { variant: null, rows: 1, payload: 0 }); // learns about 30 ms per run
    hold();
    const blocker = s.submit(other, { variant: null, rows: 1, payload: 1 });
    const late = s.submit(slow, { variant: null, rows: 1, payload: 2, deadline: performance.now() + 20 });
    release();
    await expect(late).rejects.toThrow("less than the run's expected");
    await blocker;
    expect(runs.map((r) => r.payloads[0])).toEqual([0, 1]);
    expect(slow.figures().shed.laxity).toBe(1);
  });

  test("a deadline passing in the queue drops the request then; one passed at submission is refused", async () => {
    const { s, runs, hold, release, queue } = harness();
    const q = queue("a", { coalesce: false });
    hold();
    const first = s.submit(q, { variant: null, rows: 1, payload: 1 });
    const t0 = performance.now();
    await expect(s.submit(q, { variant: null, rows: 1, payload: 2, deadline: t0 + 30 })).rejects.toThrow(
      "deadline passed while it was queued",
    );
    expect(performance.now() - t0).toBeLessThan(2000);
    await expect(s.submit(q, { variant: null, rows: 1, payload: 3, deadline: t0 - 1 })).rejects.toMatchObject({
      code: "DEADLINE_EXCEEDED",
    });
    release();
    await first;
    expect(runs).toHaveLength(1);
    expect(q.figures().shed.deadline).toBe(2);
  });

  test("fair keeps the last execution slot for a model with nothing in flight; fifo lets one model take every slot", async () => {
    for (const discipline of ["fair", "fifo"] as const) {
      const { s, runs, hold, release, queue } = harness({ discipline, maxInFlight: 2 });
      const flood = queue("flood", { coalesce: false, maxInFlight: 4 });
      const light = queue("light", { coalesce: false });
      hold();
      const f = [1, 2, 3].map((p) => s.submit(flood, { variant: null, rows: 1, payload: p }));
      // fair: one flood execution runs, the other slot stays free; fifo: the flood holds both.
      expect(flood.inFlight).toBe(discipline === "fair" ? 1 : 2);
      const l = s.submit(light, { variant: null, rows: 1, payload: 10 });
      expect(light.inFlight).toBe(discipline === "fair" ? 1 : 0);
      release();
      await Promise.all([...f, l]);
      const order = runs.map((r) => r.model);
      expect(order.indexOf("light")).toBe(discipline === "fair" ? 1 : 3);
    }
  });

  test("a coalescing model with an execution in flight starts another only when its queue fills a whole batch", async () => {
    const { s, runs, hold, release, queue } = harness({ maxInFlight: 2 });
    const q = queue("a", { maxInFlight: 2 });
    hold();
    const first = s.submit(q, { variant: null, rows: 1, payload: 1 });
    const few = [2, 3, 4].map((p) => s.submit(q, { variant: null, rows: 1, payload: p }));
    // Three rows wait for the running execution rather than take the second slot alone.
    expect([q.inFlight, q.figures().queued]).toEqual([1, 3]);
    const more = [5, 6, 7, 8, 9].map((p) => s.submit(q, { variant: null, rows: 1, payload: p }));
    // Eight queued fill b8: it starts beside the first.
    expect([q.inFlight, q.figures().queued]).toEqual([2, 0]);
    release();
    expect(await Promise.all([first, ...few, ...more])).toEqual([2, 4, 6, 8, 10, 12, 14, 16, 18]);
    expect(runs.map((r) => r.size)).toEqual([1, 8]);
  });

  test("a max queue delay holds a partial batch, and a full one leaves at once", async () => {
    const { s, runs, queue } = harness({ maxInFlight: Number.POSITIVE_INFINITY });
    const q = queue("a", { maxQueueDelayMs: 150 });
    const t0 = performance.now();
    const lone = s.submit(q, { variant: null, rows: 1, payload: 1 });
    expect(runs).toHaveLength(0);
    await lone;
    expect(performance.now() - t0).toBeGreaterThan(100);
    const eight = [1, 2, 3, 4, 5, 6, 7, 8].map((p) => s.submit(q, { variant: null, rows: 1, payload: p }));
    expect(runs.at(-1)?.size).toBe(8);
    await Promise.all(eight);
  });
});

describe("fair cost accounting", () => {
  test("an execution is charged from its start, or from when the one before it finished", () => {
    expect(chargedFrom(10, Number.NEGATIVE_INFINITY)).toBe(10);
    expect(chargedFrom(10, 4)).toBe(10);
    expect(chargedFrom(10, 25)).toBe(25);
  });

  test("time spent waiting behind another model's execution is not charged as the waiting model's cost", async () => {
    // Two executions in flight at once: heavy runs 60 ms, light is dispatched beside it and is
    // done 5 ms after it (as on a device that runs one at a time). Light's learned cost is those
    // 5 ms, not the 65 ms from its dispatch.
    const s = new DeviceScheduler({ ...OPTIONS, discipline: "fair", maxInFlight: 2 });
    let heavyDone = () => {};
    const heavyFinished = new Promise<void>((r) => {
      heavyDone = r;
    });
    const heavy = s.register<number, number>('model "heavy"', policy({ coalesce: false }), async (_v, p) => {
      await Bun.sleep(60);
      heavyDone();
      return [...p];
    });
    const light = s.register<number, number>('model "light"', policy({ coalesce: false }), async (_v, p) => {
      await heavyFinished;
      await Bun.sleep(5);
      return [...p];
    });
    await Promise.all([
      s.submit(heavy, { variant: null, rows: 1, payload: 1 }),
      s.submit(light, { variant: null, rows: 1, payload: 2 }),
    ]);
    const heavyCost = Object.values(heavy.figures().costMs)[0] as number;
    const lightCost = Object.values(light.figures().costMs)[0] as number;
    expect(heavyCost).toBeGreaterThanOrEqual(55);
    expect(lightCost).toBeLessThan(30);
  });
});

describe("batch-size costs", () => {
  test("a size measured long ago counts as unmeasured, and its next run replaces the old average", () => {
    const f = new FairShare(1, 1000, 0.3);
    f.record(8, 0.544, 0);
    expect(f.measured(8, 100)).toBe(0.544);
    expect(f.measured(8, REMEASURE_AFTER_MS + 1)).toBeUndefined();
    f.record(8, 0.002, REMEASURE_AFTER_MS + 1);
    expect(f.measured(8, REMEASURE_AFTER_MS + 2)).toBe(0.002);
    f.record(8, 0.004, REMEASURE_AFTER_MS + 3);
    expect(f.measured(8, REMEASURE_AFTER_MS + 4)).toBeCloseTo(0.3 * 0.004 + 0.7 * 0.002, 12);
  });
});
