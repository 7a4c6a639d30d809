import { CStruct } from "../abi/cstruct.ts";
import {
  type CallableSlot,
  PJRT_Buffer_Destroy_Args,
  PJRT_Executable_Destroy_Args,
  PJRT_LoadedExecutable_Destroy_Args,
} from "../abi/structs.ts";
import type { PjrtApi } from "../api/pjrt-api.ts";

export type HandleKind = "buffer" | "loaded_executable" | "executable";

const DESTROY: Record<HandleKind, { slot: CallableSlot; make: (handle: number) => CStruct }> = {
  buffer: { slot: "PJRT_Buffer_Destroy", make: (buffer) => new CStruct(PJRT_Buffer_Destroy_Args, { buffer }) },
  loaded_executable: {
    slot: "PJRT_LoadedExecutable_Destroy",
    make: (executable) => new CStruct(PJRT_LoadedExecutable_Destroy_Args, { executable }),
  },
  executable: {
    slot: "PJRT_Executable_Destroy",
    make: (executable) => new CStruct(PJRT_Executable_Destroy_Args, { executable }),
  },
};

/**
 * Every PJRT handle a client hands out, so each is destroyed exactly once: by its owner's
 * dispose() (the plan), by the FinalizationRegistry when the owner is collected undisposed (the
 * safety net), or by the client's destroy (handles must die before their client).
 */
export class Ownership {
  private readonly api: PjrtApi;
  private readonly live = new Map<number, { kind: HandleKind; handle: number }>();
  private nextToken = 1;
  private readonly registry: FinalizationRegistry<number>;

  constructor(api: PjrtApi) {
    this.api = api;
    this.registry = new FinalizationRegistry((token) => this.release(token));
  }

  /** Registers a handle; `owner` is the JS object whose collection releases it. Returns a token. */
  adopt(owner: object, kind: HandleKind, handle: number): number {
    const token = this.nextToken++;
    this.live.set(token, { kind, handle });
    this.registry.register(owner, token, owner);
    return token;
  }

  /** Destroys a handle now (explicit dispose). Safe to call twice. */
  release(token: number, owner?: object): void {
    const entry = this.live.get(token);
    if (!entry) return;
    this.live.delete(token);
    if (owner) this.registry.unregister(owner);
    const destroy = DESTROY[entry.kind];
    try {
      this.api.call(destroy.slot, destroy.make(entry.handle));
    } catch {
      // A destroy that fails leaves nothing to retry; the error was read and destroyed by call().
    }
  }

  get count(): number {
    return this.live.size;
  }

  destroyAll(): void {
    for (const token of [...this.live.keys()]) this.release(token);
  }
}
