import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { isXlaserveError } from "../src/index.ts";
import { moduleSignature } from "../src/bundle/modules.ts";

/**
 * Thousands of truncated and mutated copies of a real portable artifact (the MLP's b1 module,
 * written by jax.export) through the bundle loader's signature read: each one either still
 * reads, or fails with a clean BUNDLE_INVALID / MODULE_INVALID that says where. Never another
 * exception, never a hang (each input is timed).
 */
const ARTIFACT = new Uint8Array(
  readFileSync(join(import.meta.dir, "..", "..", "..", "tests", "fixtures", "mlp_portable_b1.mlirbc")),
);
const AT = { bundle: "fuzz", file: "model.b1.mlir" };

/** A small deterministic PRNG (xorshift32), so a failure can be replayed. */
function prng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 2 ** 32;
  };
}

function* inputs(): Generator<[string, Uint8Array]> {
  for (let n = 4; n < ARTIFACT.length; n++) yield [`truncated to ${n} bytes`, ARTIFACT.subarray(0, n)];
  const random = prng(20261201);
  for (let i = 0; i < 3000; i++) {
    const copy = ARTIFACT.slice();
    const flips = 1 + Math.floor(random() * 4);
    const where: number[] = [];
    for (let f = 0; f < flips; f++) {
      const at = 4 + Math.floor(random() * (copy.length - 4));
      copy[at] = Math.floor(random() * 256);
      where.push(at);
    }
    yield [`bytes changed at ${where.join(", ")} (case ${i})`, copy];
  }
  for (let i = 0; i < 500; i++) {
    const at = 4 + Math.floor(random() * (ARTIFACT.length - 4));
    const cut = Math.min(Math.floor(random() * 16), ARTIFACT.length - at);
    const copy = new Uint8Array(ARTIFACT.length - cut);
    copy.set(ARTIFACT.subarray(0, at));
    copy.set(ARTIFACT.subarray(at + cut), at);
    yield [`${cut} bytes removed at ${at}`, copy];
  }
}

describe("portable artifacts: fuzzed input", () => {
  test("every truncated or mutated artifact reads or fails cleanly, each within a bounded time", () => {
    let read = 0;
    let refused = 0;
    let slowest = 0;
    const unclean: string[] = [];
    for (const [what, bytes] of inputs()) {
      const started = performance.now();
      try {
        moduleSignature(bytes, AT);
        read++;
      } catch (e) {
        refused++;
        // Unreadable bytes: BUNDLE_INVALID with the offset and what was expected there; bytes that
        // read but hold no usable @main: MODULE_INVALID. Either way naming the file.
        const clean =
          ((isXlaserveError(e, "BUNDLE_INVALID") &&
            typeof e.details.offset === "number" &&
            typeof e.details.expected === "string") ||
            isXlaserveError(e, "MODULE_INVALID")) &&
          e.details.file === AT.file &&
          e.message.includes(AT.file);
        if (!clean) unclean.push(`${what}: ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`);
      }
      slowest = Math.max(slowest, performance.now() - started);
    }
    console.log(`fuzz: ${read} still read, ${refused} refused, slowest input ${slowest.toFixed(1)} ms`);
    expect(unclean).toEqual([]);
    expect(refused).toBeGreaterThan(2000);
    expect(slowest).toBeLessThan(2000);
  }, 120_000);
});
