/**
 * One thread of bench/gpu/diag/parallel-loads.ts: opens the same plugin (the same library and
 * function table as the main thread's), then deserializes-and-loads a program `loads` times into
 * the main thread's client, handing each loaded executable's address back.
 */
import { CStruct, keepAlive, ownedBytes } from "../../../packages/backend-pjrt/src/abi/cstruct.ts";
import { PJRT_Executable_DeserializeAndLoad_Args } from "../../../packages/backend-pjrt/src/abi/structs.ts";
import { PjrtApi } from "../../../packages/backend-pjrt/src/api/pjrt-api.ts";

declare const self: Worker;

export interface LoadJob {
  readonly pluginPath: string;
  readonly client: number;
  readonly program: Uint8Array;
  readonly loads: number;
}

let job: { api: PjrtApi; data: ReturnType<typeof ownedBytes>; size: number; client: number; loads: number } | null =
  null;

// First message: the job (open the plugin, copy the program, answer "ready"); then "go": load,
// answering with each load's time and the absolute start and end (performance.timeOrigin based,
// comparable across threads).
self.onmessage = (event: MessageEvent<LoadJob | "go">) => {
  try {
    if (event.data !== "go") {
      const { pluginPath, client, program, loads } = event.data;
      job = { api: PjrtApi.open(pluginPath), data: ownedBytes(program), size: program.byteLength, client, loads };
      self.postMessage({ ready: true });
      return;
    }
    if (!job) throw new Error("go before the job");
    const handles: number[] = [];
    const ms: number[] = [];
    const startAt = performance.timeOrigin + performance.now();
    for (let i = 0; i < job.loads; i++) {
      const args = new CStruct(PJRT_Executable_DeserializeAndLoad_Args, {
        client: job.client,
        serialized_executable: job.data.address,
        serialized_executable_size: job.size,
      });
      const t0 = performance.now();
      job.api.call("PJRT_Executable_DeserializeAndLoad", args);
      ms.push(performance.now() - t0);
      handles.push(args.get("loaded_executable"));
      keepAlive(args);
    }
    const endAt = performance.timeOrigin + performance.now();
    keepAlive(job.data);
    self.postMessage({ handles, ms, startAt, endAt });
  } catch (error) {
    self.postMessage({ error: String(error) });
  }
};
