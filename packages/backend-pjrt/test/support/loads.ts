import type { HostTensor } from "@xlaserve/core";
import { LAYOUT_0_113 } from "../../src/abi/slots.ts";

/** The mock's call counter slot for program loads. */
export const LOADS = LAYOUT_0_113.slots.indexOf("PJRT_Executable_DeserializeAndLoad");
/** The mock's call counter slot for destroying a loaded program. */
export const DESTROYS = LAYOUT_0_113.slots.indexOf("PJRT_LoadedExecutable_Destroy");

export const text = (s: string) => new TextEncoder().encode(s);

/** A 1-d f32 tensor over an explicit ArrayBuffer (what C may be handed). */
export const f32 = (values: number[]): HostTensor => ({
  dtype: "f32",
  shape: [values.length],
  data: new Float32Array(new ArrayBuffer(values.length * 4)).map((_, i) => values[i] ?? 0),
});

/** What a promise settles to: its value, or what it was rejected with. */
export async function outcome<T>(promise: Promise<T>): Promise<T | unknown> {
  try {
    return await promise;
  } catch (error) {
    return error;
  }
}
