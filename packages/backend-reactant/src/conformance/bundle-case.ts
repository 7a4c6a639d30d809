import { existsSync } from "node:fs";
import { join } from "node:path";
import {
  type AbstractBackend,
  type Bundle,
  type DType,
  type HostTensor,
  bf16BitsToNumber,
  f16BitsToNumber,
  loadBundle,
  openSafetensors,
  uploadAll,
} from "@xlaserve/core";
import { createReactantBackend } from "../backend.ts";
import type { CaseResult } from "./run-file.ts";

/**
 * A bundle with XLA's reference outputs (reference.safetensors, written by
 * tools/export_jax_bundle.py) as conformance cases: one case per compiled batch size, run through
 * the engine's AbstractBackend (compile, upload, execute, download) on the stored inputs.
 *
 * Integer and bool outputs must be equal. Float outputs must be within `FLOAT_TOLERANCE` of the
 * reference, relative to the output's largest magnitude (at least 1): XLA CPU sums in other
 * orders (f32) and keeps excess precision between fused low-precision ops, where the engine
 * rounds every op to its type.
 */
export const FLOAT_TOLERANCE: Partial<Record<DType, number>> = {
  f64: 1e-9,
  f32: 1e-5,
  f16: 1e-2,
  bf16: 3e-2,
};

/** True where `dir` is a bundle folder that carries XLA reference outputs. */
export function isReferenceBundle(dir: string): boolean {
  return existsSync(join(dir, "manifest.yaml")) && existsSync(join(dir, "reference.safetensors"));
}

export interface OutputCheck {
  readonly name: string;
  readonly dtype: DType;
  readonly ok: boolean;
  /** Largest |engine - XLA| over the output's largest magnitude (at least 1); integers: mismatches. */
  readonly error: number;
  readonly detail?: string;
}

/** One batch size's outputs against the reference. */
export function checkOutputs(
  names: readonly string[],
  actual: readonly HostTensor[],
  expected: readonly HostTensor[],
): OutputCheck[] {
  return names.map((name, i) => {
    const a = actual[i];
    const e = expected[i] as HostTensor;
    if (!a) return { name, dtype: e.dtype, ok: false, error: Number.POSITIVE_INFINITY, detail: "missing output" };
    if (a.dtype !== e.dtype || a.shape.join("x") !== e.shape.join("x")) {
      const detail = `got ${a.dtype}[${a.shape.join("x")}], XLA ${e.dtype}[${e.shape.join("x")}]`;
      return { name, dtype: e.dtype, ok: false, error: Number.POSITIVE_INFINITY, detail };
    }
    const tolerance = FLOAT_TOLERANCE[e.dtype];
    const av = numbersOf(a);
    const ev = numbersOf(e);
    if (tolerance === undefined) {
      let first = -1;
      let count = 0;
      for (let k = 0; k < ev.length; k++) {
        if (av[k] !== ev[k]) {
          if (first < 0) first = k;
          count++;
        }
      }
      const detail = first < 0 ? undefined : `${count} differ; first at ${first}: ${av[first]} vs XLA ${ev[first]}`;
      return { name, dtype: e.dtype, ok: count === 0, error: count, ...(detail ? { detail } : {}) };
    }
    let scale = 1;
    for (let k = 0; k < ev.length; k++) {
      const x = ev[k] as number;
      if (Number.isFinite(x)) scale = Math.max(scale, Math.abs(x));
    }
    let worst = 0;
    let at = -1;
    for (let k = 0; k < ev.length; k++) {
      const x = av[k] as number;
      const y = ev[k] as number;
      if (Number.isNaN(x) && Number.isNaN(y)) continue;
      const d = x === y ? 0 : Math.abs(x - y) / scale;
      if (!(d <= worst)) {
        worst = Number.isNaN(d) ? Number.POSITIVE_INFINITY : d;
        at = k;
      }
    }
    const ok = worst <= tolerance;
    const detail = ok
      ? undefined
      : `relative error ${worst.toExponential(2)} > ${tolerance} at ${at}: ${av[at]} vs XLA ${ev[at]}`;
    return { name, dtype: e.dtype, ok, error: worst, ...(detail ? { detail } : {}) };
  });
}

function numbersOf(t: HostTensor): ArrayLike<number> {
  if (t.dtype === "bf16" || t.dtype === "f16") {
    const bits = t.data as Uint16Array;
    const decode = t.dtype === "bf16" ? bf16BitsToNumber : f16BitsToNumber;
    return Float64Array.from(bits, decode);
  }
  if (t.data instanceof BigInt64Array || t.data instanceof BigUint64Array) return Array.from(t.data, Number);
  return t.data as ArrayLike<number>;
}

/** The stored inputs, weights and XLA outputs of one batch size. */
export function referenceCase(
  bundle: Bundle,
  batch: number,
): { inputs: HostTensor[]; expected: HostTensor[]; names: string[] } {
  const ref = openSafetensors(join(bundle.dir, "reference.safetensors"), { bundle: bundle.name });
  const take = (key: string): HostTensor => {
    if (!ref.tensors.has(key)) throw new Error(`${bundle.name}: reference.safetensors has no ${key}`);
    return ref.tensor(key);
  };
  const inputs = bundle.manifest.executableInputs.map((s) => take(`b${batch}/inputs/${s.name}`));
  const names = bundle.manifest.executableOutputs.map((s) => s.name);
  const expected = names.map((n) => take(`b${batch}/outputs/${n}`));
  return { inputs, expected, names };
}

/** Every batch size of the bundle at `dir` as a case; `name` is the name reports show. */
export async function runBundleCases(dir: string, name: string, backend?: AbstractBackend): Promise<CaseResult[]> {
  const family = `bundle:${name.replace(/^.*\//, "")}`;
  let bundle: Bundle;
  try {
    bundle = await loadBundle(dir);
  } catch (e) {
    return [{ file: name, func: null, family, status: "failed", detail: `bundle: ${(e as Error).message}` }];
  }
  const be = backend ?? createReactantBackend();
  const results: CaseResult[] = [];
  try {
    const weights = await uploadAll(
      be,
      bundle.weights.argumentOrder.map((w) => bundle.weights.tensor(w)),
    );
    for (const batch of bundle.manifest.compiledBatchSizes) {
      const func = `b${batch}`;
      try {
        const checks = await runBatch(be, bundle, batch, weights);
        const bad = checks.filter((c) => !c.ok);
        results.push(
          bad.length === 0
            ? { file: name, func, family, status: "passed" }
            : {
                file: name,
                func,
                family,
                status: "failed",
                detail: bad.map((c) => `${c.name}: ${c.detail}`).join("; "),
              },
        );
      } catch (e) {
        results.push({ file: name, func, family, status: "failed", detail: (e as Error).message });
      }
    }
    for (const w of weights) w.dispose();
  } finally {
    if (!backend) await be.dispose();
  }
  return results;
}

/** Compiles and runs one batch size on `be` and checks its outputs. */
export async function runBatch(
  be: AbstractBackend,
  bundle: Bundle,
  batch: number,
  weights: Parameters<AbstractBackend["execute"]>[1],
): Promise<OutputCheck[]> {
  const module = bundle.modules.find((m) => m.batchSize === batch) ?? bundle.modules.find((m) => m.batchSize === null);
  if (!module) throw new Error(`${bundle.name}: no module for batch ${batch}`);
  const { inputs, expected, names } = referenceCase(bundle, batch);
  const exe = await be.compile({ bytes: await module.read(), format: module.format, origin: module.path }, {});
  const args = await uploadAll(be, inputs);
  try {
    const outs = await be.execute(exe, [...args, ...weights]);
    const host = await Promise.all(outs.map((o) => be.download(o)));
    for (const o of outs) o.dispose();
    return checkOutputs(names, host, expected);
  } finally {
    for (const a of args) a.dispose();
    exe.dispose();
  }
}
