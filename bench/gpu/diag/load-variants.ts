/**
 * Diagnostic: what deserialize-and-load time depends on. Compiles the bundle's module for `batch`
 * with XLA debug options (default; command buffers off; autotuning off), then per
 * variant: 9 loads with and 9 without overriding compile options, the first run, latency (median
 * of 100), the program's first bytes (the format XLA chose: a riegeli signature, 83af70d1..., is
 * the split-proto format whose load deserializes the compiled thunks) and whether the loaded program's
 * outputs are the compiled one's bytes. SAVE_DIR=dir writes each variant's program as
 * <dir>/resnet50.b<batch>.<variant>.pjrt.
 *
 *   bun bench/gpu/diag/load-variants.ts <plugin.so> <bundle dir> <batch>
 *   bun bench/gpu/diag/load-variants.ts <plugin.so> <bundle dir> <batch> loads <program.pjrt>
 *   bun bench/gpu/diag/load-variants.ts <plugin.so> <bundle dir> <batch> trace <program.pjrt>
 *
 * loads: 9 loads of a saved program in this process (run it under different XLA_FLAGS).
 *
 * trace: three loads of a serialized program, the last between markers on stderr, for a run with
 * TF_CPP_MIN_LOG_LEVEL=0 TF_CPP_MAX_VLOG_LEVEL=1 (XLA's log lines carry microsecond times).
 */
import { loadBundle } from "@xlaserve/core";
import { createPjrtBackend } from "@xlaserve/backend-pjrt";
import { CStruct, keepAlive, ownedBytes } from "../../../packages/backend-pjrt/src/abi/cstruct.ts";
import { PJRT_Executable_DeserializeAndLoad_Args } from "../../../packages/backend-pjrt/src/abi/structs.ts";
import { PjrtExecutable } from "../../../packages/backend-pjrt/src/runtime/executable.ts";
import { compileOptionsProto } from "../../../packages/backend-pjrt/src/compile-options.ts";
import {
  disposeAll,
  downloadAll,
  inputsFor,
  moduleFor,
  runOnceSha256,
  sha256All,
  timeExecutions,
  uploadAll,
  uploadWeights,
} from "../../lib/bundle-io.ts";
import { median } from "../../lib/stats.ts";

const [pluginPath, bundleDir, batchArg, mode] = process.argv.slice(2);
const batch = Number(batchArg ?? 1);
const be = createPjrtBackend({ pluginPath: pluginPath!, isolateCompile: false });
console.log(JSON.stringify({ startupMs: be.startupMs }));
const bundle = await loadBundle(bundleDir!);
const module = moduleFor(bundle, batch);
const source = { bytes: await module.read(), format: module.format };

function loadRaw(bytes: Uint8Array, withOptions: boolean): PjrtExecutable {
  const data = ownedBytes(bytes);
  const optsBytes = compileOptionsProto({});
  const opts = ownedBytes(optsBytes);
  const args = new CStruct(PJRT_Executable_DeserializeAndLoad_Args, {
    client: be.client.handle,
    serialized_executable: data.address,
    serialized_executable_size: bytes.byteLength,
    overridden_serialized_compile_options: withOptions ? opts.address : 0,
    overridden_serialized_compile_options_size: withOptions ? optsBytes.byteLength : 0,
  });
  be.client.api.call("PJRT_Executable_DeserializeAndLoad", args);
  keepAlive(data, opts, args);
  return new PjrtExecutable(be.client, args.get("loaded_executable"));
}

/** Milliseconds of each of `n` loads (the program freed after each). */
function timeLoads(bytes: Uint8Array, withOptions: boolean, n = 9): number[] {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const l0 = performance.now();
    const e = loadRaw(bytes, withOptions);
    times.push(performance.now() - l0);
    e.dispose();
  }
  return times;
}

if (mode === "loads") {
  const bytes = new Uint8Array(await Bun.file(process.argv[6]!).arrayBuffer());
  // Minor page faults of each load too: a first load in a fresh process maps the plugin's code
  // for its parser and printers page by page, which costs more on a virtual machine.
  const faults: number[] = [];
  const times: number[] = [];
  for (let i = 0; i < 9; i++) {
    const f0 = process.resourceUsage().minorPageFault;
    times.push(timeLoads(bytes, true, 1)[0]!);
    faults.push(process.resourceUsage().minorPageFault - f0);
  }
  console.log(
    JSON.stringify({
      program: process.argv[6],
      xlaFlags: process.env.XLA_FLAGS ?? null,
      median: median(times),
      all: times,
      minorFaults: faults,
    }),
  );
  process.exit(0);
}

if (mode === "trace") {
  const bytes = new Uint8Array(await Bun.file(process.argv[6]!).arrayBuffer());
  loadRaw(bytes, true).dispose();
  loadRaw(bytes, true).dispose();
  console.error("=====TRACE-BEGIN=====");
  const t0 = performance.now();
  loadRaw(bytes, true).dispose();
  console.error(`=====TRACE-END===== ${(performance.now() - t0).toFixed(2)} ms`);
  process.exit(0);
}

const weights = await uploadWeights(be, bundle);
const inputs = await uploadAll(be, inputsFor(bundle, module, batch).tensors);
const args = [...inputs, ...weights];
const variants: Record<string, Record<string, string | number | boolean>> = {
  default: {},
  commandBufferOff: { xla_gpu_enable_command_buffer: "" },
  autotune0: { xla_gpu_autotune_level: 0 },
};
const out: Record<string, unknown> = {};
for (const [name, flags] of Object.entries(variants)) {
  try {
    const t0 = performance.now();
    const exe = await be.compile(source, { xlaFlags: flags });
    const compileMs = performance.now() - t0;
    const bytes = await be.serialize(exe);
    if (process.env.SAVE_DIR) await Bun.write(`${process.env.SAVE_DIR}/resnet50.b${batch}.${name}.pjrt`, bytes);
    const row: Record<string, unknown> = {
      compileMs,
      bytes: bytes.byteLength,
      head: Buffer.from(bytes.subarray(0, 12)).toString("hex"),
    };
    const compiledOut = await runOnceSha256(be, exe, args);
    for (const withOptions of [true, false]) {
      const times = timeLoads(bytes, withOptions);
      row[withOptions ? "loadMsWithOptions" : "loadMsNoOptions"] = {
        median: median(times),
        all: times.map((x) => +x.toFixed(2)),
      };
    }
    const loaded = loadRaw(bytes, false);
    const first0 = performance.now();
    const o = await be.execute(loaded, args);
    const loadedOut = await downloadAll(be, o);
    row.firstRunMs = performance.now() - first0;
    disposeAll(o);
    row.outputsSameBytesAfterLoad = sha256All(loadedOut) === compiledOut;
    const lat = await timeExecutions(be, loaded, args, 5, 100);
    row.latencyMedianMs = median(lat);
    out[name] = row;
    console.log(name, JSON.stringify(row));
    loaded.dispose();
    exe.dispose();
  } catch (e) {
    out[name] = { error: String(e) };
    console.log(name, "error", String(e));
  }
}
console.log(JSON.stringify({ batch, variants: out }));
await be.dispose();
