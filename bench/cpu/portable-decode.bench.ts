/**
 * Reading a model's program at load: decoding its portable artifact (MLIR bytecode of VHLO)
 * against parsing its StableHLO text twin, both into the same program model, then planning it for
 * the CPU engine. ResNet-50 at batch 1 by default. The text side is the anchor: ratios are text
 * time / portable time, same run.
 *
 * The headline is the CPU engine's compile as a worker runs it at load (`backend.compile` on the
 * module file's bytes: read + plan, nothing cached between turns), in alternating turns (text,
 * portable, portable, text, ...) so the shared machine's load falls on both sides alike; figures
 * are medians over turns after warm-up, wall time and the process's CPU time. Then, in turns of
 * their own, the breakdown (the bundle loader's signature check, the read, for portable artifacts
 * its container + IR and VHLO -> StableHLO parts, and planning), and the first load in fresh
 * processes (code not yet warm, as in a worker's first model).
 *
 * The two modules come from tools/export_jax_bundle.py (exported here into a temporary folder
 * unless --text and --portable name existing module files).
 *
 *   bun bench/cpu/portable-decode.bench.ts [--model resnet50] [--text F --portable F]
 *       [--turns 200] [--warmup 60] [--cold 5]
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Program, createReactantBackend } from "@xlaserve/backend-reactant";
import { readModuleBytes } from "@xlaserve/backend-reactant/read-module.ts";
import { detectModuleFormat } from "@xlaserve/core";
import { moduleSignature } from "@xlaserve/core/bundle/modules.ts";
import { AttrTypeTable } from "@xlaserve/stablehlo/bytecode/attr-types.ts";
import { readContainer } from "@xlaserve/stablehlo/bytecode/container.ts";
import { IrReader } from "@xlaserve/stablehlo/bytecode/ir.ts";
import { python } from "../lib/anchor.ts";
import { intFlag, parseFlags } from "../lib/args.ts";
import { BenchResult, resultsDir } from "../lib/results.ts";
import { median, round } from "../lib/stats.ts";

const USAGE = `
bun bench/cpu/portable-decode.bench.ts [options]
  --model NAME       example to export (default resnet50)
  --text FILE        an existing text module (with --portable: no export)
  --portable FILE    its portable-artifact twin
  --turns N          timed turns of each side (default 200)
  --warmup N         untimed turns first (default 60)
  --cold N           fresh processes per side for the first-load figure (default 5; 0: none)
  --results-dir DIR  where the JSON goes
`;
const { values } = parseFlags(USAGE, {
  model: { type: "string" },
  text: { type: "string" },
  portable: { type: "string" },
  turns: { type: "string" },
  warmup: { type: "string" },
  cold: { type: "string" },
  "results-dir": { type: "string" },
});
const model = (values.model as string | undefined) ?? "resnet50";
const turns = Math.max(1, intFlag(values.turns, 200, "turns"));
const warmup = Math.max(0, intFlag(values.warmup, 60, "warmup"));
const coldRuns = Math.max(0, intFlag(values.cold, 5, "cold"));
const result = new BenchResult("portable-decode");
result.dir = resultsDir(values["results-dir"] as string | undefined);
result.figure("settings", { model, turns, warmup, coldProcessesPerSide: coldRuns });

function moduleIn(dir: string): string {
  const file = readdirSync(dir).find((f) => /^model(\.b\d+)?\.mlir$/.test(f));
  if (!file) throw new Error(`no model*.mlir in ${dir}`);
  return join(dir, file);
}

function exportPair(): { text: string; portable: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), "xlaserve-portable-bench-"));
  const tool = resolve(import.meta.dir, "..", "..", "tools", "export_jax_bundle.py");
  for (const [sub, extra] of [
    ["text", []],
    ["portable", ["--portable"]],
  ] as const) {
    console.log(`exporting ${model} (${sub}) ...`);
    execFileSync(python(), [tool, model, join(dir, sub), "--batch-sizes", "1", "--name", model, ...extra], {
      stdio: ["ignore", "ignore", "inherit"],
      timeout: 600_000,
    });
  }
  return {
    text: moduleIn(join(dir, "text")),
    portable: moduleIn(join(dir, "portable")),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

type Side = "text" | "portable";
const SIDES: Side[] = ["text", "portable"];
const PARTS = ["compile", "signature", "read", "plan", "containerAndIr", "vhloToStablehlo"] as const;
type Part = (typeof PARTS)[number];

function timeOf(fn: () => void): number {
  const started = performance.now();
  fn();
  return performance.now() - started;
}

await result.step("measure", async () => {
  const pair =
    values.text && values.portable
      ? { text: values.text as string, portable: values.portable as string, cleanup: () => {} }
      : exportPair();
  try {
    const bytes: Record<Side, Uint8Array> = {
      text: new Uint8Array(readFileSync(pair.text)),
      portable: new Uint8Array(readFileSync(pair.portable)),
    };
    if (detectModuleFormat(bytes.portable) !== "bytecode")
      throw new Error(`${pair.portable} is not a portable artifact`);
    result.figure("moduleBytes", { text: bytes.text.byteLength, portable: bytes.portable.byteLength });
    const backend = createReactantBackend();
    const samples: Record<Side, Record<Part, number[]>> = {
      text: Object.fromEntries(PARTS.map((p) => [p, []])) as unknown as Record<Part, number[]>,
      portable: Object.fromEntries(PARTS.map((p) => [p, []])) as unknown as Record<Part, number[]>,
    };
    const origin = "model.mlir";
    const cpuMs = (since: NodeJS.CpuUsage) => {
      const u = process.cpuUsage(since);
      return (u.user + u.system) / 1000;
    };
    // What the worker does: the engine's compile of the file's bytes (read + plan). Timed in a
    // loop of its own, so no breakdown's garbage lands in a compile's time.
    const compileTurn = async (side: Side, keep: boolean) => {
      const cpu = process.cpuUsage();
      const started = performance.now();
      const exe = await backend.compile(
        { bytes: bytes[side], format: side === "text" ? "text" : "bytecode", origin },
        {},
      );
      const wall = performance.now() - started;
      const cpuTime = cpuMs(cpu);
      exe.dispose();
      if (!keep) return;
      samples[side].compile.push(wall);
      compileCpu[side].push(cpuTime);
    };
    // The same work in parts, and the bundle loader's signature check before it.
    const breakdownTurn = (side: Side, keep: boolean) => {
      const b = bytes[side];
      const signatureMs = timeOf(() => moduleSignature(b, { bundle: model, file: origin }));
      let module: ReturnType<typeof readModuleBytes> | undefined;
      const readMs = timeOf(() => {
        module = readModuleBytes(b, origin);
      });
      const planMs = timeOf(() => {
        const program = new Program(module as ReturnType<typeof readModuleBytes>);
        program.func(program.entryName());
      });
      if (!keep) return;
      const s = samples[side];
      s.signature.push(signatureMs);
      s.read.push(readMs);
      s.plan.push(planMs);
      if (side === "portable") {
        const irMs = timeOf(() => {
          const c = readContainer(b, origin);
          new IrReader(c, new AttrTypeTable(c)).readTopLevel();
        });
        s.containerAndIr.push(irMs);
        s.vhloToStablehlo.push(Math.max(0, readMs - irMs));
      }
    };
    const compileCpu: Record<Side, number[]> = { text: [], portable: [] };
    // Alternate which side goes first, so neither always runs right after the other's garbage.
    const orderOf = (i: number) => (i % 2 === 0 ? SIDES : [...SIDES].reverse());
    for (let i = 0; i < warmup + turns; i++) for (const side of orderOf(i)) await compileTurn(side, i >= warmup);
    for (let i = 0; i < warmup + turns; i++) for (const side of orderOf(i)) breakdownTurn(side, i >= warmup);
    result.figure("compileCpuTime", {
      text: { medianMs: round(median(compileCpu.text)) },
      portable: { medianMs: round(median(compileCpu.portable)) },
      note: "process CPU time (all threads: JIT and GC included) over each compile; the shared machine's other processes do not count",
    });
    const figures: Record<Side, Record<string, { medianMs: number; minMs: number }>> = { text: {}, portable: {} };
    for (const side of SIDES)
      for (const part of PARTS) {
        const xs = samples[side][part];
        if (xs.length > 0) figures[side][part] = { medianMs: round(median(xs)), minMs: round(Math.min(...xs)) };
      }
    result.figure("warm", figures);
    const med = (side: Side, part: Part) => median(samples[side][part]);
    const perTurn = samples.text.compile.map((t, i) => t / (samples.portable.compile[i] as number));
    result.figure("compileRatioPerTurn", { median: round(median(perTurn)) });
    console.log(
      `compile (read + plan) medians: text ${med("text", "compile").toFixed(3)} ms, portable ${med("portable", "compile").toFixed(3)} ms`,
    );
    for (const side of SIDES)
      console.log(
        `  ${side}: signature ${med(side, "signature").toFixed(3)}, read ${med(side, "read").toFixed(3)}, plan ${med(side, "plan").toFixed(3)} ms`,
      );
    result.ratio(
      `${model} read + plan: text / portable`,
      { label: "text: backend.compile (parse + plan), median ms", value: med("text", "compile") },
      { label: "portable: backend.compile (decode + plan), median ms", value: med("portable", "compile") },
      ">= 3",
    );
    result.ratio(
      `${model} read + plan, process CPU time: text / portable`,
      { label: "text: backend.compile, median CPU ms", value: median(compileCpu.text) },
      { label: "portable: backend.compile, median CPU ms", value: median(compileCpu.portable) },
    );
    result.ratio(
      `${model} read only: text / portable`,
      { label: "text parse, median ms", value: med("text", "read") },
      { label: "portable decode (container, IR, VHLO -> StableHLO), median ms", value: med("portable", "read") },
    );
    result.ratio(
      `${model} signature check + read + plan: text / portable`,
      {
        label: "text: bundle loader's signature check + compile, median ms",
        value: med("text", "signature") + med("text", "compile"),
      },
      {
        label: "portable: bundle loader's signature check + compile, median ms",
        value: med("portable", "signature") + med("portable", "compile"),
      },
    );
    await backend.dispose();
    if (coldRuns > 0) await measureCold(pair);
  } finally {
    pair.cleanup();
  }
});
result.write();

/** The first signature check + compile in a fresh process, per side, alternating. */
async function measureCold(pair: { text: string; portable: string }): Promise<void> {
  const child = resolve(import.meta.dir, "portable-decode-cold.ts");
  const out: Record<Side, number[]> = { text: [], portable: [] };
  for (let i = 0; i < coldRuns; i++) {
    for (const side of i % 2 === 0 ? SIDES : [...SIDES].reverse()) {
      const line = execFileSync(process.execPath, [child, pair[side]], { encoding: "utf8", timeout: 120_000 });
      const ms = Number(/^first-load-ms (\S+)$/m.exec(line)?.[1]);
      if (!Number.isFinite(ms)) throw new Error(`the cold-start child printed no time: ${line.trim()}`);
      out[side].push(ms);
    }
  }
  result.figure("cold", {
    text: { medianMs: round(median(out.text)), samplesMs: out.text.map((x) => round(x)) },
    portable: { medianMs: round(median(out.portable)), samplesMs: out.portable.map((x) => round(x)) },
  });
  result.ratio(
    `${model} first load in a fresh process (signature check + compile): text / portable`,
    { label: "text, median ms", value: median(out.text) },
    { label: "portable, median ms", value: median(out.portable) },
  );
}
