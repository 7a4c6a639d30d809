import { type HostTensor, XlaserveError, loadBundle, uploadAll, zeros } from "@xlaserve/core";
import { SourceText } from "@xlaserve/stablehlo/parser/lexer.ts";
import { createReactantBackend } from "./backend.ts";
import { referenceCase } from "./conformance/bundle-case.ts";
import { type Step, StepTimes } from "./plan/program.ts";

/**
 * Where one program's time goes on the CPU engine: exclusive time per op kind and per op (a while
 * or reduce is charged only for what its body's ops did not take; fused elementwise chains count
 * as one `fused` op), over `runs` executions after a warm-up run.
 */
export interface ProfileOptions {
  /** Timed executions (default 5). */
  readonly runs?: number;
  /** Ops listed one by one (default 15). */
  readonly top?: number;
  /** File name in messages. */
  readonly origin?: string;
}

export interface OpKindTime {
  readonly kind: string;
  readonly msPerRun: number;
  readonly callsPerRun: number;
  readonly share: number;
}

export interface OpInstanceTime extends OpKindTime {
  /** `line N: %result = kind -> result type` of the op in the module text (no line for bytecode). */
  readonly op: string;
}

export interface Profile {
  readonly runs: number;
  /** Wall time of one execution, profiling overhead included. */
  readonly wallMsPerRun: number;
  /** Wall time not inside any op (argument checks, result copies, the clock reads). */
  readonly outsideOpsMsPerRun: number;
  readonly byKind: OpKindTime[];
  readonly byOp: OpInstanceTime[];
  /** The same as a table for a terminal. */
  readonly text: string;
}

/** Profiles `module` (StableHLO text) run on `args` (inputs then weights, in call order). */
export async function profileExecution(
  module: Uint8Array | string,
  args: readonly HostTensor[],
  options: ProfileOptions = {},
): Promise<Profile> {
  const runs = Math.max(1, options.runs ?? 5);
  const steps = new StepTimes();
  const backend = createReactantBackend({ steps });
  try {
    const bytes = typeof module === "string" ? new TextEncoder().encode(module) : module;
    // MLIR bytecode (a portable artifact) starts "ML\xefR"; its ops have no lines to show.
    const bytecode = bytes[0] === 0x4d && bytes[1] === 0x4c && bytes[2] === 0xef && bytes[3] === 0x52;
    const text = bytecode ? null : new TextDecoder().decode(bytes);
    const format = bytecode ? "bytecode" : "text";
    const exe = await backend.compile({ bytes, format, origin: options.origin ?? "<module>" }, {});
    const buffers = await uploadAll(backend, args);
    for (const b of await backend.execute(exe, buffers)) b.dispose();
    steps.byStep.clear();
    const t0 = performance.now();
    for (let i = 0; i < runs; i++) for (const b of await backend.execute(exe, buffers)) b.dispose();
    const wall = (performance.now() - t0) / runs;
    for (const b of buffers) b.dispose();
    exe.dispose();
    return summarizeSteps(steps, runs, wall, text, options.top ?? 15);
  } finally {
    await backend.dispose();
  }
}

function summarizeSteps(steps: StepTimes, runs: number, wall: number, text: string | null, top: number): Profile {
  const source = text === null ? null : new SourceText(text, "<module>");
  const lineOf = (offset: number) => (source ? source.position(offset).line : null);
  const kinds = new Map<string, { ms: number; count: number }>();
  const ops: OpInstanceTime[] = [];
  let inside = 0;
  for (const [step, t] of steps.byStep) {
    const kind = kindOf(step);
    const k = kinds.get(kind) ?? { ms: 0, count: 0 };
    k.ms += t.ms;
    k.count += t.count;
    kinds.set(kind, k);
    inside += t.ms;
    ops.push({ op: describe(step, lineOf), ...times(kind, t.ms, t.count, runs, wall) });
  }
  const byKind = [...kinds]
    .map(([kind, k]) => times(kind, k.ms, k.count, runs, wall))
    .sort((a, b) => b.msPerRun - a.msPerRun);
  const byOp = ops.sort((a, b) => b.msPerRun - a.msPerRun).slice(0, top);
  const outside = Math.max(0, wall - inside / runs);
  const lines = [
    `wall ${fixed(wall)} ms per run over ${runs} runs; outside ops ${fixed(outside)} ms`,
    "by op kind (exclusive ms per run, share of wall, calls per run):",
    ...byKind.map(
      (k) => `  ${k.kind.padEnd(34)} ${fixed(k.msPerRun).padStart(10)}  ${pct(k.share)}  x${k.callsPerRun}`,
    ),
    `top ${byOp.length} ops:`,
    ...byOp.map((o) => `  ${fixed(o.msPerRun).padStart(10)}  ${pct(o.share)}  x${o.callsPerRun}  ${o.op}`),
  ];
  return { runs, wallMsPerRun: round(wall), outsideOpsMsPerRun: round(outside), byKind, byOp, text: lines.join("\n") };
}

function times(kind: string, ms: number, count: number, runs: number, wall: number): OpKindTime {
  return { kind, msPerRun: round(ms / runs), callsPerRun: round(count / runs), share: round(ms / runs / wall) };
}

function kindOf(step: Step): string {
  return step.label?.startsWith("fused") ? "fused elementwise" : (step.label ?? step.op.name);
}

function describe(step: Step, lineOf: (offset: number) => number | null): string {
  const type = step.op.resultTypes[0];
  const shown = type && type.kind === "tensor" ? ` -> ${type.elem}[${type.shape.join("x")}]` : "";
  const line = lineOf(step.op.offset);
  const result = step.op.results[0] ? `${step.op.results[0]} = ` : "";
  return `${line === null ? "" : `line ${line}: `}${result}${step.label ?? step.op.name}${shown}`;
}

const round = (x: number) => Math.round(x * 1e4) / 1e4;
const fixed = (x: number) => x.toFixed(3);
const pct = (x: number) => `${(x * 100).toFixed(1).padStart(5)}%`;

export interface BundleProfile extends Profile {
  readonly model: string;
  readonly batch: number;
  readonly module: string;
  /** "reference": the inputs stored in reference.safetensors; "zeros": zeros of the @main shapes. */
  readonly inputs: "reference" | "zeros";
}

/**
 * Profiles one program of the bundle at `dir`: the module of `batch` (default the smallest
 * compiled size) on the bundle's reference inputs where it stores them, else zeros.
 */
export async function profileBundle(
  dir: string,
  options: ProfileOptions & { readonly batch?: number } = {},
): Promise<BundleProfile> {
  const bundle = await loadBundle(dir);
  const sizes = [...bundle.manifest.compiledBatchSizes].sort((a, b) => a - b);
  const batch = options.batch ?? sizes[0] ?? 1;
  const module =
    bundle.modules.find((m) => m.batchSize === batch && (m.variant === null || m.variant === 0)) ??
    bundle.modules.find((m) => m.batchSize === null);
  if (!module) {
    throw new XlaserveError(
      "INVALID_ARGUMENT",
      `${bundle.name} has no program for batch ${batch} (compiled: ${sizes.join(", ")})`,
    );
  }
  let inputs: HostTensor[];
  let source: BundleProfile["inputs"] = "reference";
  try {
    inputs = referenceCase(bundle, batch).inputs;
  } catch {
    source = "zeros";
    const n = bundle.manifest.executableInputs.length;
    const sig = module.signature?.args.slice(0, n) ?? [];
    if (sig.length !== n)
      throw new XlaserveError("MODULE_INVALID", `${module.file}: no @main signature to make inputs from`);
    inputs = sig.map((a) => zeros(a.dtype, a.shape));
  }
  const weights = bundle.weights.argumentOrder.map((name) => bundle.weights.tensor(name));
  const profile = await profileExecution(await module.read(), [...inputs, ...weights], {
    ...options,
    origin: module.path,
  });
  return { model: bundle.name, batch, module: module.file, inputs: source, ...profile };
}
