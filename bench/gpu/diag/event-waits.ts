/**
 * Diagnostic: where an execution's time goes beyond the GPU's, per way of waiting for it. For each
 * serialized program, 150 timed executions (after 10) per mode, two rounds: the completion event
 * or the first output's ready event, awaited by OnReady callback, event-loop polling, a blocking
 * PJRT_Event_Await (reference only: it blocks the JS thread) or a busy IsReady loop; plus
 * backend.execute as the worker calls it, and the time the Execute call itself takes.
 *
 *   bun bench/gpu/diag/event-waits.ts <plugin.so> <bundle dir> <batch> <program.pjrt> [...]
 *
 * Prints one JSON line per program and a final one with all of them.
 */
import { loadBundle } from "@xlaserve/core";
import { createPjrtBackend } from "@xlaserve/backend-pjrt";
import { CStruct, PointerArray, keepAlive } from "../../../packages/backend-pjrt/src/abi/cstruct.ts";
import {
  PJRT_Buffer_ReadyEvent_Args,
  PJRT_Event_Await_Args,
  PJRT_Event_Destroy_Args,
  PJRT_Event_IsReady_Args,
  PJRT_ExecuteOptions,
  PJRT_LoadedExecutable_Execute_Args,
} from "../../../packages/backend-pjrt/src/abi/structs.ts";
import { PjrtBuffer } from "../../../packages/backend-pjrt/src/runtime/buffer.ts";
import { AUTO_POLL_MS, awaitEvent } from "../../../packages/backend-pjrt/src/runtime/events.ts";
import type { PjrtExecutable } from "../../../packages/backend-pjrt/src/runtime/executable.ts";
import { inputsFor, moduleFor, uploadAll, uploadWeights } from "../../lib/bundle-io.ts";
import { summarize } from "../../lib/stats.ts";

const [pluginPath, bundleDir, batchArg, ...programs] = process.argv.slice(2);
const batch = Number(batchArg ?? 1);
const be = createPjrtBackend({ pluginPath: pluginPath!, isolateCompile: false });
const api = be.client.api;
const bundle = await loadBundle(bundleDir!);
const module = moduleFor(bundle, batch);
const weights = await uploadWeights(be, bundle);
const inputs = await uploadAll(be, inputsFor(bundle, module, batch).tensors);
const args = [...inputs, ...weights] as PjrtBuffer[];

type Wait = "callback" | "poll" | "await" | "spin";
function launch(exe: PjrtExecutable, withEvents: boolean): { outs: PjrtBuffer[]; event: number } {
  const argList = new PointerArray(args.map((b) => b.use()));
  const argLists = new PointerArray([argList.address]);
  const outList = new PointerArray(exe.outputCount);
  const outLists = new PointerArray([outList.address]);
  const events = new PointerArray(1);
  const options = new CStruct(PJRT_ExecuteOptions);
  const call = new CStruct(PJRT_LoadedExecutable_Execute_Args, {
    executable: exe.handle,
    options: options.address,
    argument_lists: argLists.address,
    num_devices: 1,
    num_args: args.length,
    output_lists: outLists.address,
    device_complete_events: withEvents ? events.address : 0,
  });
  api.call("PJRT_LoadedExecutable_Execute", call, "EXECUTE_FAILED");
  keepAlive(argList, argLists, outLists, options, call);
  const outs = Array.from({ length: exe.outputCount }, (_, i) => PjrtBuffer.adopt(be.client, outList.at(i), 0));
  return { outs, event: withEvents ? events.at(0) : 0 };
}
function readyEvent(buffer: PjrtBuffer): number {
  const a = new CStruct(PJRT_Buffer_ReadyEvent_Args, { buffer: buffer.use() });
  api.call("PJRT_Buffer_ReadyEvent", a);
  return a.get("event");
}
async function wait(event: number, how: Wait): Promise<void> {
  if (how === "callback" || how === "poll")
    return awaitEvent(api, event, "x", "PJRT_ERROR", { mode: how, autoPollMs: AUTO_POLL_MS });
  if (how === "await") api.call("PJRT_Event_Await", new CStruct(PJRT_Event_Await_Args, { event }));
  if (how === "spin") {
    const r = new CStruct(PJRT_Event_IsReady_Args, { event });
    for (;;) {
      api.call("PJRT_Event_IsReady", r);
      if (r.getBool("is_ready")) break;
    }
  }
  api.call("PJRT_Event_Destroy", new CStruct(PJRT_Event_Destroy_Args, { event }));
}

const results: Record<string, unknown> = {};
for (const file of programs) {
  const exe = (await be.deserialize(new Uint8Array(await Bun.file(file).arrayBuffer()), {})) as PjrtExecutable;
  const tag = file.split("/").pop()!;
  const modes: [string, () => Promise<void>][] = [];
  for (const how of ["callback", "poll", "await", "spin"] as Wait[]) {
    modes.push([
      `completeEvent+${how}`,
      async () => {
        const { outs, event } = launch(exe, true);
        await wait(event, how);
        for (const o of outs) o.dispose();
      },
    ]);
    if (api.slotAddress("PJRT_Buffer_ReadyEvent"))
      modes.push([
        `bufferReady+${how}`,
        async () => {
          const { outs } = launch(exe, false);
          await wait(readyEvent(outs[0]!), how);
          for (const o of outs) o.dispose();
        },
      ]);
  }
  modes.push([
    "backend.execute",
    async () => {
      for (const o of await be.execute(exe, args)) o.dispose();
    },
  ]);
  let enqueue: number[] = [];
  modes.push([
    "enqueueOnly(then await)",
    async () => {
      const t = performance.now();
      const { outs, event } = launch(exe, true);
      enqueue.push(performance.now() - t);
      await wait(event, "await");
      for (const o of outs) o.dispose();
    },
  ]);
  const row: Record<string, unknown> = {};
  for (let round = 0; round < 2; round++) {
    for (const [name, fn] of modes) {
      for (let i = 0; i < 10; i++) await fn();
      enqueue = [];
      const times: number[] = [];
      for (let i = 0; i < 150; i++) {
        const t = performance.now();
        await fn();
        times.push(performance.now() - t);
      }
      const s = summarize(times);
      row[`${name}#${round}`] = { median: s.median, p10: s.p10, p90: s.p90 };
      if (name.startsWith("enqueue")) row[`enqueueCallMs#${round}`] = summarize(enqueue).median;
    }
  }
  results[tag] = row;
  console.log(tag, JSON.stringify(row));
  exe.dispose();
}
console.log(JSON.stringify({ batch, results }));
await be.dispose();
