import { type Executable, type ModuleSource, XlaserveError } from "@xlaserve/core";
import { CStruct, PointerArray, copyBytes, keepAlive, ownedBytes } from "../abi/cstruct.ts";
import {
  PJRT_Client_Compile_Args,
  PJRT_Executable_NumOutputs_Args,
  PJRT_Executable_Serialize_Args,
  PJRT_ExecuteOptions,
  PJRT_LoadedExecutable_Execute_Args,
  PJRT_LoadedExecutable_GetExecutable_Args,
  PJRT_Program,
} from "../abi/structs.ts";
import { PjrtBuffer } from "./buffer.ts";
import type { PjrtClient } from "./client.ts";
import { deserializeAndLoad } from "./deserialize.ts";
import { awaitEvent } from "./events.ts";

/** A loaded program (PJRT_LoadedExecutable) plus its PJRT_Executable view, owned by the caller. */
export class PjrtExecutable implements Executable {
  readonly outputCount: number;
  readonly handle: number;
  private readonly client: PjrtClient;
  private readonly executableHandle: number;
  private readonly tokens: number[];
  private disposed = false;

  constructor(client: PjrtClient, loaded: number) {
    this.client = client;
    this.handle = loaded;
    const tokens = [client.owned.adopt(this, "loaded_executable", loaded)];
    const get = new CStruct(PJRT_LoadedExecutable_GetExecutable_Args, { loaded_executable: loaded });
    client.api.call("PJRT_LoadedExecutable_GetExecutable", get);
    this.executableHandle = get.get("executable");
    tokens.push(client.owned.adopt(this, "executable", this.executableHandle));
    this.tokens = tokens;
    const outputs = new CStruct(PJRT_Executable_NumOutputs_Args, { executable: this.executableHandle });
    client.api.call("PJRT_Executable_NumOutputs", outputs);
    this.outputCount = outputs.get("num_outputs");
  }

  private check(): void {
    if (this.disposed || !this.client.alive) throw new XlaserveError("DISPOSED", "the executable was already disposed");
  }

  /** PJRT_Executable_Serialize: the bytes are copied, then the plugin's copy freed by its deleter. */
  serialize(): Uint8Array {
    this.check();
    const args = new CStruct(PJRT_Executable_Serialize_Args, { executable: this.executableHandle });
    this.client.api.call("PJRT_Executable_Serialize", args);
    try {
      return copyBytes(args.get("serialized_bytes"), args.get("serialized_bytes_size"));
    } finally {
      this.client.api.callDeleter(args.get("serialized_executable_deleter"), args.get("serialized_executable"));
    }
  }

  /**
   * PJRT_LoadedExecutable_Execute on one device. Arguments are borrowed (weights stay resident);
   * the outputs are new buffers owned by the caller. Resolves once the device finished, so a
   * failure surfaces here as EXECUTE_FAILED rather than on a later download.
   */
  async execute(args: readonly PjrtBuffer[]): Promise<PjrtBuffer[]> {
    this.check();
    const argList = new PointerArray(args.map((b) => b.use()));
    const argLists = new PointerArray([argList.address]);
    const outList = new PointerArray(this.outputCount);
    const outLists = new PointerArray([outList.address]);
    const events = new PointerArray(1);
    const options = new CStruct(PJRT_ExecuteOptions);
    const call = new CStruct(PJRT_LoadedExecutable_Execute_Args, {
      executable: this.handle,
      options: options.address,
      argument_lists: argLists.address,
      num_devices: 1,
      num_args: args.length,
      output_lists: outLists.address,
      device_complete_events: events.address,
    });
    this.client.api.call("PJRT_LoadedExecutable_Execute", call, "EXECUTE_FAILED");
    keepAlive(argList, argLists, outLists, options, call);
    const device = args[0]?.device ?? 0;
    const outputs = Array.from({ length: this.outputCount }, (_, i) =>
      PjrtBuffer.adopt(this.client, outList.at(i), device),
    );
    try {
      await awaitEvent(this.client.api, events.at(0), "execute", "EXECUTE_FAILED", this.client.eventWait);
    } catch (error) {
      for (const o of outputs) o.dispose();
      throw error;
    }
    return outputs;
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    // The PJRT_Executable view goes first; the loaded executable owns the program.
    for (const token of [...this.tokens].reverse()) this.client.owned.release(token, this);
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}

/** PJRT_Client_Compile of a StableHLO module (format "mlir" takes text or bytecode alike). */
export function compileModule(client: PjrtClient, module: ModuleSource, options: Uint8Array): PjrtExecutable {
  if (module.bytes.byteLength === 0) {
    throw new XlaserveError("COMPILE_FAILED", `module ${module.origin ?? "<bytes>"} is empty`, {
      origin: module.origin,
    });
  }
  const code = ownedBytes(module.bytes);
  const format = ownedBytes("mlir", true);
  const opts = ownedBytes(options);
  const program = new CStruct(PJRT_Program, {
    code: code.address,
    code_size: module.bytes.byteLength,
    format: format.address,
    format_size: 4,
  });
  const args = new CStruct(PJRT_Client_Compile_Args, {
    client: client.handle,
    program: program.address,
    compile_options: opts.address,
    compile_options_size: options.byteLength,
  });
  try {
    client.api.call("PJRT_Client_Compile", args, "COMPILE_FAILED");
  } catch (error) {
    if (error instanceof XlaserveError) {
      throw new XlaserveError("COMPILE_FAILED", `compiling ${module.origin ?? "a module"}: ${error.message}`, {
        ...error.details,
        origin: module.origin,
        format: module.format,
      });
    }
    throw error;
  } finally {
    keepAlive(code, format, opts, program, args);
  }
  return new PjrtExecutable(client, args.get("executable"));
}

/** PJRT_Executable_DeserializeAndLoad of bytes written by `serialize`, on the calling thread. */
export function deserializeExecutable(client: PjrtClient, bytes: Uint8Array, options: Uint8Array): PjrtExecutable {
  return new PjrtExecutable(client, deserializeAndLoad(client.api, client.handle, bytes, options));
}
