import { describe, expect, test } from "bun:test";
import { createLogger } from "@xlaserve/core";
import { computeWeightBudget } from "../src/memory/budget.ts";
import { WeightManager, type WeightOwner } from "../src/memory/weights.ts";
import { FakeBackend } from "./fake-backend.ts";

const quiet = createLogger({ level: "silent" });

describe("weight budget (ReactantServer's formula)", () => {
  test("pool = min(fraction x limit, (1 - wiggle) x limit - max scratch); on-demand = pool - pinned", () => {
    const b = computeWeightBudget({
      limitBytes: 1000,
      fraction: 0.9,
      wiggle: 0.1,
      maxScratchBytes: 50,
      pinnedBytes: 200,
    });
    expect(b.scratchCeilingBytes).toBe(900);
    expect(b.poolBytes).toBe(850); // min(900, 900 - 50)
    expect(b.onDemandBytes).toBe(650);
    expect(b.pinnedOverCommit).toBe(false);
  });
  test("the fraction caps the pool when scratch is small", () => {
    const b = computeWeightBudget({
      limitBytes: 1000,
      fraction: 0.5,
      wiggle: 0.1,
      maxScratchBytes: 10,
      pinnedBytes: 0,
    });
    expect(b.poolBytes).toBe(500);
    expect(b.onDemandBytes).toBe(500);
  });
  test("scratch larger than the ceiling leaves no pool; pinned over the pool is an over-commit", () => {
    const b = computeWeightBudget({
      limitBytes: 1000,
      fraction: 0.9,
      wiggle: 0.1,
      maxScratchBytes: 2000,
      pinnedBytes: 1,
    });
    expect(b.poolBytes).toBe(0);
    expect(b.onDemandBytes).toBe(0);
    expect(b.pinnedOverCommit).toBe(true);
  });
  test("on-demand space never goes negative", () => {
    const b = computeWeightBudget({ limitBytes: 1000, fraction: 1, wiggle: 0, maxScratchBytes: 0, pinnedBytes: 1500 });
    expect(b.onDemandBytes).toBe(0);
    expect(b.pinnedOverCommit).toBe(true);
  });
});

function owner(
  backend: FakeBackend,
  name: string,
  bytes: number,
  residency: WeightOwner["residency"] = "device",
): WeightOwner {
  return {
    id: `${name}#1`,
    name,
    bytes,
    residency,
    upload: async () => [await backend.upload({ dtype: "u8", shape: [bytes], data: new Uint8Array(bytes) })],
  };
}

function setBudget(w: WeightManager, onDemand: number, pinned = 0) {
  w.setBudget(
    computeWeightBudget({
      limitBytes: onDemand + pinned,
      fraction: 1,
      wiggle: 0,
      maxScratchBytes: 0,
      pinnedBytes: pinned,
    }),
  );
}

describe("weight residency", () => {
  test("LRU eviction order: the least recently used idle model goes first", async () => {
    const be = new FakeBackend();
    const w = new WeightManager(quiet);
    setBudget(w, 100);
    for (const n of ["a", "b", "c"]) await w.register(owner(be, n, 40));
    const use = async (n: string) => (await w.acquire(`${n}#1`)).release();
    await use("a");
    await use("b");
    expect(w.lruOrder()).toEqual(["a", "b"]);
    await use("c"); // 120 > 100: evicts a
    expect(w.lruOrder()).toEqual(["b", "c"]);
    expect(w.state("a#1")?.resident).toBe(false);
    await use("b"); // touch b: c is now least recent
    await use("a"); // evicts c
    expect(w.lruOrder()).toEqual(["b", "a"]);
    expect(w.state("c#1")?.evicts).toBe(1);
    expect(w.state("a#1")?.loads).toBe(2); // came back on its next request
    expect(w.evicts).toBe(2);
    expect(w.residentOnDemandBytes).toBe(80);
    expect(be.inUse).toBe(80);
  });

  test("weights in use are never evicted; the budget is met again once they are released", async () => {
    const be = new FakeBackend();
    const w = new WeightManager(quiet);
    setBudget(w, 50);
    await w.register(owner(be, "a", 40));
    await w.register(owner(be, "b", 40));
    const leaseA = await w.acquire("a#1");
    const leaseB = await w.acquire("b#1"); // a is busy: b loads anyway, over budget
    expect(w.residentOnDemandBytes).toBe(80);
    expect(w.state("a#1")?.resident).toBe(true);
    leaseB.release(); // release re-enforces: a is still busy, so the idle one (b) goes
    expect(w.lruOrder()).toEqual(["a"]);
    leaseA.release();
    expect(w.residentOnDemandBytes).toBeLessThanOrEqual(50);
  });

  test("pinned weights stay outside the LRU; host weights are loaded per request and freed after", async () => {
    const be = new FakeBackend();
    const w = new WeightManager(quiet);
    setBudget(w, 10, 40);
    await w.register(owner(be, "p", 40, "pinned"));
    await w.register(owner(be, "h", 30, "host"));
    expect(w.pinnedBytes).toBe(40);
    expect(be.inUse).toBe(40);
    const lease = await w.acquire("h#1");
    expect(be.inUse).toBe(70);
    lease.release();
    expect(be.inUse).toBe(40);
    expect(w.state("h#1")?.loads).toBe(1);
    await (await w.acquire("h#1")).release();
    expect(w.state("h#1")?.loads).toBe(2);
    expect(w.lruOrder()).toEqual([]);
    w.unregister("p#1");
    expect(be.inUse).toBe(0);
    expect(w.pinnedBytes).toBe(0);
  });

  test("a shrinking budget evicts immediately; concurrent acquires share one load", async () => {
    const be = new FakeBackend();
    const w = new WeightManager(quiet);
    setBudget(w, 100);
    await w.register(owner(be, "a", 40));
    await w.register(owner(be, "b", 40));
    const [l1, l2] = await Promise.all([w.acquire("a#1"), w.acquire("a#1")]);
    expect(w.state("a#1")?.loads).toBe(1);
    l1.release();
    l2.release();
    await (await w.acquire("b#1")).release();
    setBudget(w, 45);
    expect(w.lruOrder()).toEqual(["b"]);
    expect(w.residentOnDemandBytes).toBe(40);
  });
});

describe("leaseIfResident (inline runs)", () => {
  test("resident weights are leased at once and count as a use; otherwise null, and nothing changes", async () => {
    const be = new FakeBackend();
    const w = new WeightManager(quiet);
    setBudget(w, 100);
    for (const n of ["a", "b"]) await w.register(owner(be, n, 40));
    await (await w.acquire("a#1")).release();
    await (await w.acquire("b#1")).release();
    expect(w.lruOrder()).toEqual(["a", "b"]);
    const lease = w.leaseIfResident("a#1");
    expect(lease?.buffers.length).toBe(1);
    expect(w.state("a#1")?.inUse).toBe(1);
    expect(w.evictNow("a#1")).toBe(false); // in use
    lease?.release();
    expect(w.state("a#1")?.inUse).toBe(0);
    expect(w.lruOrder()).toEqual(["b", "a"]); // the lease touched a
    expect(w.evictNow("a#1")).toBe(true);
    expect(w.leaseIfResident("a#1")).toBeNull(); // evicted: acquire() loads it
    expect(w.state("a#1")?.inUse).toBe(0);
    expect(w.state("a#1")?.loads).toBe(1);
    await w.register(owner(be, "h", 10, "host"));
    expect(w.leaseIfResident("h#1")).toBeNull(); // host weights come per request
    expect(w.leaseIfResident("nobody#1")).toBeNull();
  });
});
