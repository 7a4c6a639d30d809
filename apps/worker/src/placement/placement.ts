import type { DeviceBuffer, Executable, HostTensor } from "@xlaserve/core";

/**
 * Where one program's runs execute. Each program gets one at load (the backend's own: the engine
 * thread's single round trip, or upload / execute / download in direct calls); a short program
 * may move to the HTTP thread later (inline) and back when its runs drift. The request path asks
 * only this, never which backend it holds.
 */
export type PlacementKind = "engine-thread" | "direct" | "inline";

export interface Placement {
  readonly where: Exclude<PlacementKind, "inline">;
  /**
   * One execution: `inputs` uploaded, the program run on them followed by the resident
   * `weights`, every result downloaded and the temporaries freed.
   */
  run(executable: Executable, inputs: readonly HostTensor[], weights: readonly DeviceBuffer[]): Promise<HostTensor[]>;
}

/**
 * A program that runs on the calling thread, finished before the call returns, on the engine's
 * second instance there with its own copy of the weights: it needs no device lock and no lease
 * beyond the weights being resident (the weight manager still counts the engine's copy).
 */
export interface InlinePlacement {
  readonly where: "inline";
  runNow(inputs: readonly HostTensor[]): HostTensor[];
}
