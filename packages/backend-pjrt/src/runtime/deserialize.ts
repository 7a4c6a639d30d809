import { CStruct, keepAlive, ownedBytes } from "../abi/cstruct.ts";
import { PJRT_Executable_DeserializeAndLoad_Args } from "../abi/structs.ts";
import type { PjrtApi } from "../api/pjrt-api.ts";

/**
 * PJRT_Executable_DeserializeAndLoad of bytes written by `serialize`, into the client at address
 * `client`, with `options` overriding the serialized compile options. Returns the
 * PJRT_LoadedExecutable, which the caller must adopt (PjrtExecutable) on the client's thread. It
 * needs only the function table and the client's address, so the client's own thread and a loader
 * thread (load-thread.ts) make the very same call and get the very same errors.
 */
export function deserializeAndLoad(api: PjrtApi, client: number, bytes: Uint8Array, options: Uint8Array): number {
  const data = ownedBytes(bytes);
  const opts = ownedBytes(options);
  const args = new CStruct(PJRT_Executable_DeserializeAndLoad_Args, {
    client,
    serialized_executable: data.address,
    serialized_executable_size: bytes.byteLength,
    overridden_serialized_compile_options: opts.address,
    overridden_serialized_compile_options_size: options.byteLength,
  });
  try {
    api.call("PJRT_Executable_DeserializeAndLoad", args);
  } finally {
    keepAlive(data, opts, args);
  }
  return args.get("loaded_executable");
}
