import { type PjrtBackend, createPjrtBackend } from "../../../packages/backend-pjrt/src/index.ts";
import { gpuPlugin } from "./plugin.ts";

let shared: PjrtBackend | undefined;

/** One in-process PJRT backend per test process (a GPU client is expensive), or null to skip. */
export async function gpuBackend(): Promise<PjrtBackend | null> {
  const plugin = await gpuPlugin();
  if ("skip" in plugin) return null;
  shared ??= createPjrtBackend({ pluginPath: plugin.path, isolateCompile: false });
  return shared;
}
