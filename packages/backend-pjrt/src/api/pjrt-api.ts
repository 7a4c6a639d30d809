import { resolve } from "node:path";
import { CFunction, type Pointer, read } from "bun:ffi";
import { type ErrorCode, XlaserveError } from "@xlaserve/core";
import { CStruct, readString } from "../abi/cstruct.ts";
import type { VerifiedLayout } from "../abi/slots.ts";
import {
  type CallableSlot,
  PJRT_Error_Destroy_Args,
  PJRT_Error_GetCode_Args,
  PJRT_Error_Message_Args,
  SLOT_ARGS,
} from "../abi/structs.ts";
import { pjrtCodeName } from "./errors.ts";
import { gateTable } from "./gate.ts";
import { type LoadedPlugin, loadPlugin } from "./load.ts";

type SlotFn = (args: Pointer) => number | null;

const opened = new Map<string, PjrtApi>();

/** Slots whose C signature returns void rather than PJRT_Error*. */
const VOID_SLOTS = new Set<string>(["PJRT_Error_Destroy", "PJRT_Error_Message"]);

/**
 * A gated PJRT function table: the only way this package calls into a plugin. Every call goes
 * through `call`, which checks the slot is known to the verified layout and present in the
 * plugin's table, checks the args struct is the one the slot takes, sets struct_size, and turns a
 * returned PJRT_Error into an XlaserveError (reading code and message, then destroying it).
 */
export class PjrtApi {
  readonly plugin: LoadedPlugin;
  readonly verified: VerifiedLayout;
  private readonly fns = new Map<string, SlotFn>();

  private constructor(plugin: LoadedPlugin, verified: VerifiedLayout) {
    this.plugin = plugin;
    this.verified = verified;
  }

  /**
   * Loads and gates a plugin. Throws PLUGIN_NOT_FOUND or PLUGIN_VERSION_MISMATCH. One PjrtApi per
   * plugin file and process: the plugin is one library, initialized once, whatever the number of
   * clients.
   */
  static open(path: string): PjrtApi {
    const key = resolve(path);
    const cached = opened.get(key);
    if (cached) return cached;
    const api = PjrtApi.load(path);
    opened.set(key, api);
    return api;
  }

  private static load(path: string): PjrtApi {
    const plugin = loadPlugin(path);
    // A refused plugin stays mapped: unloading one whose static initializers ran (CUDA) is not
    // safe, and a mapping costs nothing.
    return new PjrtApi(plugin, gateTable(plugin.facts, path));
  }

  get version(): string {
    return `${this.plugin.facts.major}.${this.plugin.facts.minor}`;
  }

  /** The address in a slot, or 0 where the plugin leaves it empty. Never reads past the table. */
  slotAddress(slot: string): number {
    const table = this.verified.layout.table;
    const field = table.field(slot);
    if (field.offset + 8 > this.plugin.facts.structSize) return 0;
    return Number(read.u64(this.plugin.api as Pointer, field.offset));
  }

  private fn(slot: CallableSlot): SlotFn {
    const cached = this.fns.get(slot);
    if (cached) return cached;
    if (!this.verified.layout.slots.includes(slot)) {
      throw new XlaserveError("UNSUPPORTED", `${slot} is not in the PJRT ${this.version} layout the bindings know`);
    }
    const address = this.slotAddress(slot);
    if (!address) {
      throw new XlaserveError("UNSUPPORTED", `the PJRT plugin does not implement ${slot}`, {
        plugin: this.plugin.path,
        slot,
      });
    }
    const fn = CFunction({
      ptr: address as Pointer,
      args: ["ptr"],
      returns: VOID_SLOTS.has(slot) ? "void" : "ptr",
    }) as unknown as SlotFn;
    this.fns.set(slot, fn);
    return fn;
  }

  /**
   * Calls one slot with its args struct. `errorCode` is the XlaserveError code a PJRT error
   * becomes (PJRT_ERROR unless the caller knows better, e.g. COMPILE_FAILED).
   */
  call(slot: CallableSlot, args: CStruct, errorCode: ErrorCode = "PJRT_ERROR"): void {
    const error = this.callReturningError(slot, args);
    if (error) throw this.takeError(error, slot, errorCode);
  }

  /**
   * Calls one slot and returns the PJRT_Error* it returned (0 for none) without converting it;
   * the caller owns the error and must pass it to takeError or destroyError.
   */
  callReturningError(slot: CallableSlot, args: CStruct): number {
    const expected = SLOT_ARGS[slot];
    if (args.def !== expected) {
      throw new XlaserveError("INTERNAL", `${slot} takes ${expected.name}, got ${args.def.name}`);
    }
    args.set("struct_size", expected.structSize);
    return Number(this.fn(slot)(args.address) ?? 0);
  }

  /** Reads a PJRT_Error's code and message, destroys it, and returns the typed error. */
  takeError(error: number, slot: string, errorCode: ErrorCode = "PJRT_ERROR"): XlaserveError {
    const message = new CStruct(PJRT_Error_Message_Args, { error });
    this.fn("PJRT_Error_Message")(message.address);
    const text = readString(message.get("message"), message.get("message_size"));
    const code = new CStruct(PJRT_Error_GetCode_Args, { error });
    const codeError = Number(this.fn("PJRT_Error_GetCode")(code.address) ?? 0);
    const pjrtCode = codeError ? 2 : code.get("code");
    if (codeError) this.destroyError(codeError);
    this.destroyError(error);
    return new XlaserveError(errorCode, `${slot} failed: ${pjrtCodeName(pjrtCode)}: ${text}`, {
      slot,
      pjrtCode,
      pjrtCodeName: pjrtCodeName(pjrtCode),
      pjrtMessage: text,
    });
  }

  destroyError(error: number): void {
    this.fn("PJRT_Error_Destroy")(new CStruct(PJRT_Error_Destroy_Args, { error }).address);
  }

  /** Calls a plain C function pointer the plugin handed out (deleters): `void f(void*)`. */
  callDeleter(fnAddress: number, arg: number): void {
    if (!fnAddress) return;
    const fn = CFunction({ ptr: fnAddress as Pointer, args: ["ptr"], returns: "void" }) as unknown as (
      a: Pointer,
    ) => void;
    fn(arg as Pointer);
  }

  /** Nothing to release: the table is shared by every client of the plugin and stays mapped (see `open`). */
  close(): void {}
}
