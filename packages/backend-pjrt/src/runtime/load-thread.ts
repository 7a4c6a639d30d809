/**
 * A loader thread of LoadPool (load-pool.ts): runs PJRT_Executable_DeserializeAndLoad into a
 * client that another thread created and owns, and answers with the loaded executable's address;
 * the owner adopts it (PjrtExecutable), so nothing is ever owned here.
 *
 * PjrtApi.open on this thread is cheap and safe: dlopen hands back the library the owner already
 * loaded, GetPjrtApi the same table, and only the header is read for the gate. The plugin is not
 * initialized again (PJRT_Plugin_Initialize is the owner's, once per process).
 */
import { type XlaserveError, asXlaserveError } from "@xlaserve/core";
import { PjrtApi } from "../api/pjrt-api.ts";
import { deserializeAndLoad } from "./deserialize.ts";
import { type PrefaultReport, prefaultHeap, prefaultMappings } from "./prefault.ts";

declare const self: Worker;

export interface LoadRequest {
  readonly pluginPath: string;
  /** Address of the owner's PJRT_Client. */
  readonly client: number;
  /** Transferred: the serialized program and the compile options proto. */
  readonly program: ArrayBuffer;
  readonly options: ArrayBuffer;
}

/** The loaded executable's address, or the error as XlaserveError.toJSON gives it. */
export type LoadAnswer = { readonly handle: number } | { readonly error: ReturnType<XlaserveError["toJSON"]> };

/**
 * Sent when the pool starts a thread ahead of its first load: the plugin is opened then, and what
 * a first load would fault in page by page is mapped in (prefault.ts), off the owner's thread.
 */
export interface OpenRequest {
  readonly open: string;
  readonly prefaultCode: boolean;
  readonly prefaultHeapBytes: number;
}

export interface OpenedAnswer {
  readonly opened: {
    readonly ms: number;
    readonly code: PrefaultReport | null;
    readonly heapBytes: number;
  };
}

let opened: PjrtApi | null = null;
const apiFor = (pluginPath: string): PjrtApi => {
  opened ??= PjrtApi.open(pluginPath);
  return opened;
};

self.onmessage = (event: MessageEvent<LoadRequest | OpenRequest>) => {
  if ("open" in event.data) {
    const t0 = performance.now();
    const { open, prefaultCode, prefaultHeapBytes } = event.data;
    apiFor(open);
    const plugin = open.replace(/^.*\//, "");
    const code = prefaultCode ? prefaultMappings((path) => path.endsWith(plugin)) : null;
    const heapBytes = prefaultHeapBytes > 0 ? prefaultHeap(prefaultHeapBytes).bytes : 0;
    const answer: OpenedAnswer = { opened: { ms: performance.now() - t0, code, heapBytes } };
    self.postMessage(answer);
    return;
  }
  const { pluginPath, client, program, options } = event.data;
  let answer: LoadAnswer;
  try {
    const api = apiFor(pluginPath);
    answer = { handle: deserializeAndLoad(api, client, new Uint8Array(program), new Uint8Array(options)) };
  } catch (error) {
    answer = { error: asXlaserveError(error).toJSON() };
  }
  self.postMessage(answer);
};
