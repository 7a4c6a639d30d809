import { describe, expect, test } from "bun:test";
import { ConcurrencyLimiter } from "../src/scheduler/concurrency-limiter.ts";

/** Settles to "resolved", "rejected: <code>" or "pending" after the microtasks have run. */
async function stateOf(p: Promise<void>): Promise<string> {
  let state = "pending";
  p.then(
    () => {
      state = "resolved";
    },
    (e: { code?: string }) => {
      state = `rejected: ${e.code}`;
    },
  );
  await Bun.sleep(0);
  return state;
}

describe("concurrency limiter", () => {
  test("tryAcquire takes a free slot without a promise, and never jumps the queue", async () => {
    const l = new ConcurrencyLimiter(1, 2, "m");
    expect(l.tryAcquire()).toBe(true);
    expect(l.active).toBe(1);
    expect(l.tryAcquire()).toBe(false); // full
    const waiter = l.acquire();
    l.release(); // the slot passes to the waiter
    expect(await stateOf(waiter)).toBe("resolved");
    expect(l.tryAcquire()).toBe(false);
    const second = l.acquire();
    l.release();
    expect(await stateOf(second)).toBe("resolved");
    expect(l.tryAcquire()).toBe(false); // held by second
    l.release();
    expect(l.tryAcquire()).toBe(true);
    l.release();
    await l.idle();
  });

  test("FIFO: a released slot passes to the next waiter; one past the queue depth is QUEUE_FULL", async () => {
    const l = new ConcurrencyLimiter(1, 2, "m");
    expect(await stateOf(l.acquire())).toBe("resolved");
    const b = l.acquire();
    const c = l.acquire();
    expect(await stateOf(l.acquire())).toBe("rejected: QUEUE_FULL");
    expect(await stateOf(b)).toBe("pending");
    l.release();
    expect(await stateOf(b)).toBe("resolved");
    expect(await stateOf(c)).toBe("pending");
    l.release();
    expect(await stateOf(c)).toBe("resolved");
    l.release();
    expect(l.active).toBe(0);
  });

  test("a waiter whose request was aborted is dropped at its turn and never runs", async () => {
    const l = new ConcurrencyLimiter(1, 4, "m");
    await l.acquire();
    const gone = new AbortController();
    const b = l.acquire(gone.signal);
    const c = l.acquire();
    gone.abort();
    l.release();
    expect(await stateOf(b)).toBe("rejected: UNAVAILABLE");
    expect(await stateOf(c)).toBe("resolved");
    expect(l.active).toBe(1);
    expect(l.queued).toBe(0);
  });

  test("aborted waiters do not hold queue places: a full queue drops them first", async () => {
    const l = new ConcurrencyLimiter(1, 1, "m");
    await l.acquire();
    const gone = new AbortController();
    const b = l.acquire(gone.signal);
    gone.abort();
    const c = l.acquire();
    expect(await stateOf(b)).toBe("rejected: UNAVAILABLE");
    expect(await stateOf(c)).toBe("pending");
    l.release();
    expect(await stateOf(c)).toBe("resolved");
  });

  test("the last release with only aborted waiters leaves the limiter idle", async () => {
    const l = new ConcurrencyLimiter(1, 4, "m");
    await l.acquire();
    const gone = new AbortController();
    const b = l.acquire(gone.signal);
    gone.abort();
    const idle = l.idle();
    l.release();
    expect(await stateOf(b)).toBe("rejected: UNAVAILABLE");
    expect(l.active).toBe(0);
    expect(await stateOf(idle)).toBe("resolved");
  });
});
