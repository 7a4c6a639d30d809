import { type AbstractBackend, type HostTensor, isXlaserveError } from "@xlaserve/core";
import type { NDArray } from "../array.ts";
import { type CheckKind, runCheck } from "../kernels/checks.ts";
import { elemTypeOf } from "../plan/dtype-map.ts";
import { type CaseResult, familyOf } from "./run-file.ts";

/**
 * Conformance through any AbstractBackend (the PJRT backend on a GPU host). A backend cannot
 * evaluate the check custom calls, so the testdata module is rewritten: the checks are removed
 * and @main returns every (actual, expected) pair they compared; the checks then run here on
 * the downloaded values. Interpret files (check-dialect programs) are reported unsupported.
 */

interface CheckSite {
  readonly kind: CheckKind;
  readonly operands: [string, string];
  readonly types: [string, string];
}

const CHECK_LINE =
  /^\s*stablehlo\.custom_call @check\.(expect_eq|expect_close|expect_almost_eq)\((%[\w#.]+), (%[\w#.]+)\)[^:]*: \((.*)\) -> \(\)\s*$/;
const KINDS: Record<string, CheckKind> = { expect_eq: "eq", expect_close: "close", expect_almost_eq: "almost_eq" };

/** Splits `tensor<2x3xf32>, tensor<complex<f32>>` at top-level commas. */
function splitTypes(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "<") depth++;
    else if (c === ">") depth--;
    else if (c === "," && depth === 0) {
      out.push(text.slice(start, i).trim());
      start = i + 1;
    }
  }
  out.push(text.slice(start).trim());
  return out;
}

/** The rewritten module and the checks to apply to its results, or null if not a testdata shape. */
export function rewriteForBackend(text: string): { module: string; checks: CheckSite[] } | null {
  const lines = text.split("\n");
  const checks: CheckSite[] = [];
  const kept: string[] = [];
  let mainLine = -1;
  let returnLine = -1;
  for (const line of lines) {
    const m = CHECK_LINE.exec(line);
    if (m) {
      const types = splitTypes(m[4] as string);
      checks.push({
        kind: KINDS[m[1] as string] as CheckKind,
        operands: [m[2] as string, m[3] as string],
        types: [types[0] as string, types[1] as string],
      });
      continue;
    }
    if (mainLine < 0 && /func\.func public @main\(\)/.test(line)) mainLine = kept.length;
    else if (mainLine >= 0 && returnLine < 0 && /^\s*(func\.)?return\b/.test(line)) returnLine = kept.length;
    kept.push(line);
  }
  if (checks.length === 0 || mainLine < 0 || returnLine < 0) return null;
  const values = checks.flatMap((c) => c.operands);
  const types = checks.flatMap((c) => c.types);
  kept[mainLine] = (kept[mainLine] as string).replace(/->.*\{\s*$/, `-> (${types.join(", ")}) {`);
  kept[returnLine] = `    return ${values.join(", ")} : ${types.join(", ")}`;
  return { module: kept.join("\n"), checks };
}

function toNDArray(t: HostTensor): NDArray {
  return { type: elemTypeOf(t.dtype), shape: [...t.shape], data: t.data };
}

export async function runFileOnBackend(backend: AbstractBackend, text: string, file: string): Promise<CaseResult> {
  const family = familyOf(file);
  const rewritten = rewriteForBackend(text);
  if (!rewritten) {
    return {
      file,
      func: null,
      family,
      status: "unsupported",
      detail: "only testdata-style programs (@main with check custom calls) run on this backend",
    };
  }
  try {
    const exe = await backend.compile(
      { bytes: new TextEncoder().encode(rewritten.module), format: "text", origin: file },
      {},
    );
    const outputs = await backend.execute(exe, []);
    const hosts = await Promise.all(outputs.map((o) => backend.download(o)));
    for (const o of outputs) o.dispose();
    exe.dispose();
    for (let i = 0; i < rewritten.checks.length; i++) {
      const check = rewritten.checks[i] as CheckSite;
      const message = runCheck(
        check.kind,
        toNDArray(hosts[2 * i] as HostTensor),
        toNDArray(hosts[2 * i + 1] as HostTensor),
      );
      if (message !== null)
        return { file, func: null, family, status: "failed", detail: `check.expect_${check.kind}: ${message}` };
    }
    return { file, func: null, family, status: "passed" };
  } catch (e) {
    const status = isXlaserveError(e, "UNSUPPORTED") ? "unsupported" : "failed";
    return { file, func: null, family, status, detail: e instanceof Error ? e.message.split("\n")[0] : String(e) };
  }
}
