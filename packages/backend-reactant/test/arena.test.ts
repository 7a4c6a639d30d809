import { describe, expect, test } from "bun:test";
import { Arena, takeData } from "../src/plan/arena.ts";

describe("arena", () => {
  test("small arrays are recycled after the next flush, not before", () => {
    const arena = new Arena({ pool: true });
    const a = takeData(arena, "f32", 10);
    arena.retain(a);
    expect(arena.inUseBytes).toBe(40);
    arena.release(a);
    expect(arena.inUseBytes).toBe(0);
    // Pending until a safe point: a kernel may still hold it.
    expect(takeData(arena, "f32", 10)).not.toBe(a);
    arena.flush();
    expect(arena.pooledBytes).toBe(40);
    expect(takeData(arena, "f32", 10)).toBe(a);
    // Another class or length is another pool.
    arena.retain(a);
    arena.release(a);
    arena.flush();
    expect(takeData(arena, "i32", 10)).not.toBe(a);
    expect(takeData(arena, "f32", 11)).not.toBe(a);
    expect(takeData(arena, "f32", 10)).toBe(a);
  });

  test("views of one storage share its count and keep it out of the pool", () => {
    const arena = new Arena({ pool: true });
    const a = takeData(arena, "f32", 8);
    const view = a.subarray(2, 6);
    arena.retain(a);
    arena.retain(view);
    // Counted once: 32 bytes of storage, however many arrays hold it.
    expect(arena.inUseBytes).toBe(32);
    arena.release(a);
    arena.flush();
    expect(arena.inUseBytes).toBe(32);
    expect(arena.pooledBytes).toBe(0);
    arena.release(view);
    arena.flush();
    expect(arena.inUseBytes).toBe(0);
    expect(takeData(arena, "f32", 8)).toBe(a);
  });

  test("storage counted again before the flush stays out of the pool; releases without a count are ignored", () => {
    const arena = new Arena({ pool: true });
    const a = takeData(arena, "f32", 4);
    arena.retain(a);
    arena.release(a);
    arena.retain(a); // a value handed over uncounted, then kept
    arena.flush();
    expect(arena.pooledBytes).toBe(0);
    arena.release(a);
    arena.release(a);
    expect(arena.inUseBytes).toBe(0);
    arena.flush();
    expect(arena.pooledBytes).toBe(16);
    const foreign = new Float32Array(4);
    arena.release(foreign);
    arena.retain(foreign);
    arena.release(foreign);
    arena.flush();
    // Storage the arena did not make is never pooled.
    expect(arena.pooledBytes).toBe(16);
  });

  test("a pooled array counted again leaves the pool", () => {
    const arena = new Arena({ pool: true });
    const a = takeData(arena, "f64", 2);
    arena.retain(a);
    arena.release(a);
    arena.flush();
    expect(arena.pooledBytes).toBe(16);
    arena.retain(a);
    expect(arena.pooledBytes).toBe(0);
    expect(takeData(arena, "f64", 2)).not.toBe(a);
  });
});
