import { describe, expect, test } from "bun:test";
import { type HostTensor, isXlaserveError } from "@xlaserve/core";
import { createReactantBackend } from "../src/index.ts";
import { dtypeOf } from "../src/plan/dtype-map.ts";
import { loadExample } from "./helpers/bundles.ts";

const ADD = new TextEncoder().encode(`func.func @main(%a: tensor<2x2xf32>, %w: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %0 = stablehlo.add %a, %w : tensor<2x2xf32>
  %1 = stablehlo.multiply %0, %0 : tensor<2x2xf32>
  return %1 : tensor<2x2xf32>
}`);

const tensor = (values: number[]): HostTensor => ({ dtype: "f32", shape: [2, 2], data: new Float32Array(values) });

async function expectCode(promise: Promise<unknown>, code: string): Promise<void> {
  try {
    await promise;
  } catch (e) {
    expect(isXlaserveError(e)).toBe(true);
    expect((e as { code: string }).code).toBe(code);
    return;
  }
  throw new Error(`expected ${code}`);
}

describe("reactant backend", () => {
  test("identity", () => {
    const b = createReactantBackend();
    const id = b.identity();
    expect(id).toMatchObject({
      backend: "reactant",
      platform: "cpu",
      runtimeVersion: "none",
      deviceKind: "cpu",
      computeCapability: "none",
    });
    expect(id.buildId).toMatch(/^plan\d+-engine/);
  });

  test("compile, execute with weights reused, download, serialize / deserialize", async () => {
    const b = createReactantBackend();
    const exe = await b.compile({ bytes: ADD, format: "text" }, {});
    expect(exe.outputCount).toBe(1);
    const w = await b.upload(tensor([1, 1, 1, 1]));
    for (const x of [1, 2]) {
      const a = await b.upload(tensor([x, x, x, x]));
      const [out] = await b.execute(exe, [a, w]);
      const host = await b.download(out as NonNullable<typeof out>);
      expect(Array.from(host.data as Float32Array)).toEqual([(x + 1) ** 2, (x + 1) ** 2, (x + 1) ** 2, (x + 1) ** 2]);
      out?.dispose();
      a.dispose();
    }
    const loaded = await b.deserialize(await b.serialize(exe), {});
    const a = await b.upload(tensor([0, 1, 2, 3]));
    const [x] = await b.execute(exe, [a, w]);
    const [y] = await b.execute(loaded, [a, w]);
    expect(await b.download(y as NonNullable<typeof y>)).toEqual(await b.download(x as NonNullable<typeof x>));
    await b.dispose();
  });

  test("memory stats count live buffers and reset the peak", async () => {
    const b = createReactantBackend();
    const exe = await b.compile({ bytes: ADD, format: "text" }, {});
    const a = await b.upload(tensor([1, 2, 3, 4]));
    const w = await b.upload(tensor([1, 2, 3, 4]));
    expect(b.memoryStats().inUseBytes).toBe(32);
    const [out] = await b.execute(exe, [a, w]);
    // inputs + the intermediate (dead after the multiply) + the output
    expect(b.memoryStats().peakBytes).toBe(64);
    expect(b.memoryStats().inUseBytes).toBe(48);
    out?.dispose();
    b.resetPeakMemory();
    expect(b.memoryStats()).toMatchObject({ inUseBytes: 32, peakBytes: 32 });
  });

  test("repeated runs of a model with calls leave no buffers behind", async () => {
    const b = createReactantBackend();
    const c = loadExample("mlp", 1);
    const exe = await b.compile({ bytes: new TextEncoder().encode(c.mlir), format: "text" }, {});
    const args = await Promise.all(
      c.args.map((a) => b.upload({ dtype: dtypeOf(a.type), shape: a.shape, data: a.data as HostTensor["data"] })),
    );
    const baseline = b.memoryStats().inUseBytes;
    b.resetPeakMemory();
    for (let i = 0; i < 3; i++) for (const out of await b.execute(exe, args)) out.dispose();
    expect(b.memoryStats().inUseBytes).toBe(baseline);
    expect(b.memoryStats().peakBytes).toBeGreaterThan(baseline);
  });

  test("pooled storage is reused across runs without leaking one run's values into the next", async () => {
    const b = createReactantBackend();
    const exe = await b.compile({ bytes: ADD, format: "text" }, {});
    const w = await b.upload(tensor([1, 1, 1, 1]));
    const baseline = b.memoryStats().inUseBytes;
    let kept: Awaited<ReturnType<typeof b.execute>> = [];
    for (let x = 0; x < 20; x++) {
      // Uploads and results come from the pool once earlier ones are disposed; results kept
      // across a run (every other one here) must not be handed out again meanwhile.
      const a = await b.upload(tensor([x, x + 1, x + 2, -x]));
      const outs = await b.execute(exe, [a, w]);
      a.dispose();
      const host = await b.download(outs[0] as NonNullable<(typeof outs)[0]>);
      expect(Array.from(host.data as Float32Array)).toEqual([(x + 1) ** 2, (x + 2) ** 2, (x + 3) ** 2, (1 - x) ** 2]);
      for (const o of kept) {
        const previous = await b.download(o);
        const y = x - 1;
        expect(Array.from(previous.data as Float32Array)).toEqual([
          (y + 1) ** 2,
          (y + 2) ** 2,
          (y + 3) ** 2,
          (1 - y) ** 2,
        ]);
        o.dispose();
      }
      kept = outs;
    }
    for (const o of kept) o.dispose();
    expect(b.memoryStats().inUseBytes).toBe(baseline);
  });

  test("bad input gets typed errors", async () => {
    const b = createReactantBackend();
    await expectCode(
      b.compile({ bytes: new TextEncoder().encode("func.func @main( {"), format: "text" }, {}),
      "MODULE_INVALID",
    );
    await expectCode(
      b.compile({ bytes: new Uint8Array([0x4d, 0x4c, 0xef, 0x52]), format: "bytecode" }, {}),
      "MODULE_INVALID",
    );
    const exe = await b.compile({ bytes: ADD, format: "text" }, {});
    const a = await b.upload(tensor([1, 2, 3, 4]));
    await expectCode(b.execute(exe, [a]), "INVALID_ARGUMENT");
    const wrong = await b.upload({ dtype: "f32", shape: [4], data: new Float32Array(4) });
    await expectCode(b.execute(exe, [a, wrong]), "INVALID_ARGUMENT");
    await expectCode(b.deserialize(new Uint8Array(16), {}), "CACHE_CORRUPT");
    await b.dispose();
    await expectCode(b.upload(tensor([1, 2, 3, 4])), "DISPOSED");
  });

  test("a failing kernel is EXECUTE_FAILED, not a crash", async () => {
    const b = createReactantBackend();
    const text = `func.func @main(%a: tensor<4xf32>, %i: tensor<i32>) -> tensor<2xf32> {
      %0 = stablehlo.dynamic_slice %a, %i, sizes = [8] : (tensor<4xf32>, tensor<i32>) -> tensor<2xf32>
      return %0 : tensor<2xf32>
    }`;
    const exe = await b.compile({ bytes: new TextEncoder().encode(text), format: "text" }, {});
    const a = await b.upload({ dtype: "f32", shape: [4], data: new Float32Array(4) });
    const i = await b.upload({ dtype: "i32", shape: [], data: new Int32Array(1) });
    await expectCode(b.execute(exe, [a, i]), "EXECUTE_FAILED");
  });
});
