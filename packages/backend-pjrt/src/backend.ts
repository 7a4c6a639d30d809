import {
  ownedBy,
  type AbstractBackend,
  type BackendIdentity,
  type CompileOptions,
  type DeviceBuffer,
  type DeviceInfo,
  type Executable,
  type HostTensor,
  type MemoryStats,
  type ModuleSource,
  XlaserveError,
  asXlaserveError,
} from "@xlaserve/core";
import { PjrtApi } from "./api/pjrt-api.ts";
import { compileOptionsProto } from "./compile-options.ts";
import { withUnknownLocations } from "./module-locations.ts";
import { pjrtIdentity, rememberPluginFileHash } from "./identity.ts";
import { compileInChild } from "./isolated/isolated-compile.ts";
import { PjrtBuffer, downloadBuffer, uploadTensor } from "./runtime/buffer.ts";
import { PjrtClient } from "./runtime/client.ts";
import { PjrtExecutable, compileModule, deserializeExecutable } from "./runtime/executable.ts";
import { clearMemoryStats, deviceMemoryStats } from "./runtime/memory.ts";
import type { EventWait } from "./runtime/events.ts";
import type { NamedOption } from "./runtime/named-values.ts";
import { type PluginAttributes, initializePlugin, pluginAttributes } from "./runtime/plugin.ts";

export interface PjrtBackendOptions {
  /** Path of the PJRT plugin shared object (e.g. the jax-cuda13-pjrt plugin's xla_cuda_plugin.so). */
  readonly pluginPath: string;
  /** Fraction of device memory the allocator may use (client option memory_fraction). */
  readonly memoryFraction?: number;
  /**
   * Reserve memory_fraction of the device up front. Off by default: preallocating adds 1.5-2 s
   * to the first upload, and the memory probe measures real use instead.
   */
  readonly preallocate?: boolean;
  /** Further client options passed to PJRT_Client_Create as named values. */
  readonly clientOptions?: readonly NamedOption[];
  /**
   * Compile in a child process with the same plugin, handing the serialized program back, so a
   * module that aborts XLA fails that model only (COMPILER_CRASHED). On by default.
   */
  readonly isolateCompile?: boolean;
  /**
   * How ready events are awaited (runtime/events.ts): "auto" (the default: polled on event-loop
   * turns for the first few milliseconds, then PJRT_Event_OnReady), "callback" (OnReady with a
   * threadsafe JSCallback from the start) or "poll" (IsReady on turns, then short timers).
   */
  readonly eventWait?: EventWait;
  /**
   * The plugin file's content hash (identity.ts pluginFileHash) when the caller already knows it:
   * hashing reads the whole plugin (several hundred MB), and a backend hosted on another thread
   * has no other way to reuse the caller's memo.
   */
  readonly pluginFileHash?: string;
  /** Milliseconds a child compile may take before it is killed. */
  readonly compileTimeoutMs?: number;
}

/** The client options PJRT_Client_Create receives for these backend options. */
export function clientOptionsFor(options: PjrtBackendOptions): NamedOption[] {
  const named: NamedOption[] = [{ name: "preallocate", type: "bool", value: options.preallocate ?? false }];
  if (options.memoryFraction !== undefined) {
    if (!(options.memoryFraction > 0 && options.memoryFraction <= 1)) {
      throw new XlaserveError("CONFIG_INVALID", `memoryFraction must be in (0, 1], got ${options.memoryFraction}`);
    }
    named.push({ name: "memory_fraction", type: "float", value: options.memoryFraction });
  }
  return [...named, ...(options.clientOptions ?? [])];
}

/** AbstractBackend over a PJRT plugin's C API. */
export class PjrtBackend implements AbstractBackend {
  readonly name = "pjrt" as const;
  readonly api: PjrtApi;
  readonly client: PjrtClient;
  readonly attributes: PluginAttributes;
  readonly options: PjrtBackendOptions;
  private disposed = false;

  /**
   * Milliseconds of each start-up step (dlopen and gate, PJRT_Plugin_Initialize, attributes,
   * PJRT_Client_Create), for the load log and the first-result benchmark: start-up is most of a
   * cold start's time and these say which part.
   */
  readonly startupMs: { open: number; initialize: number; attributes: number; client: number };

  constructor(options: PjrtBackendOptions) {
    this.options = options;
    if (options.pluginFileHash) rememberPluginFileHash(options.pluginPath, options.pluginFileHash);
    let t = performance.now();
    const lap = () => {
      const now = performance.now();
      const ms = Math.round((now - t) * 1000) / 1000;
      t = now;
      return ms;
    };
    this.api = PjrtApi.open(options.pluginPath);
    const open = lap();
    initializePlugin(this.api);
    const initialize = lap();
    this.attributes = pluginAttributes(this.api);
    const attributes = lap();
    this.client = PjrtClient.create(this.api, clientOptionsFor(options));
    this.client.eventWait = options.eventWait ?? "auto";
    this.startupMs = { open, initialize, attributes, client: lap() };
  }

  private live(): PjrtClient {
    if (this.disposed) throw new XlaserveError("DISPOSED", "the PJRT backend was disposed");
    return this.client;
  }

  identity(device = 0): BackendIdentity {
    return pjrtIdentity({
      pluginPath: this.options.pluginPath,
      xlaVersion: this.attributes.xlaVersion,
      platformName: this.client.platformName,
      platformVersion: this.client.platformVersion,
      device: this.client.device(device),
    });
  }

  devices(): readonly DeviceInfo[] {
    return this.client.devices.map((d) => ({
      id: d.index,
      kind: d.kind,
      attributes: Object.fromEntries(
        Object.entries(d.attributes).map(([k, v]) => [
          k,
          Array.isArray(v) ? v.join(".") : (v as string | number | boolean),
        ]),
      ),
    }));
  }

  async upload(tensor: HostTensor, device = 0): Promise<DeviceBuffer> {
    return uploadTensor(this.live(), tensor, device);
  }

  async download(buffer: DeviceBuffer): Promise<HostTensor> {
    return downloadBuffer(this.live(), ownedBy(buffer, PjrtBuffer, "buffer"));
  }

  async compile(source: ModuleSource, options: CompileOptions): Promise<Executable> {
    const client = this.live();
    const proto = compileOptionsProto(options);
    const module = options.keepLocations ? source : withUnknownLocations(source);
    if (this.options.isolateCompile ?? true) {
      const serialized = await compileInChild({
        pluginPath: this.options.pluginPath,
        clientOptions: clientOptionsFor(this.options),
        module,
        compileOptions: proto,
        timeoutMs: this.options.compileTimeoutMs,
      });
      return deserializeExecutable(client, serialized, proto);
    }
    return compileModule(client, module, proto);
  }

  async serialize(executable: Executable): Promise<Uint8Array> {
    return ownedBy(executable, PjrtExecutable, "executable").serialize();
  }

  async deserialize(bytes: Uint8Array, options: CompileOptions): Promise<Executable> {
    return deserializeExecutable(this.live(), bytes, compileOptionsProto(options));
  }

  async execute(executable: Executable, args: readonly DeviceBuffer[]): Promise<DeviceBuffer[]> {
    this.live();
    return ownedBy(executable, PjrtExecutable, "executable").execute(args.map((a) => ownedBy(a, PjrtBuffer, "buffer")));
  }

  memoryStats(device = 0): MemoryStats {
    return deviceMemoryStats(this.live(), device);
  }

  resetPeakMemory(device = 0): void {
    clearMemoryStats(this.live(), device);
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    this.client.destroy();
    this.api.close();
  }
}

/** Opens, gates and initializes a plugin and creates its client. Throws typed errors only. */
export function createPjrtBackend(options: PjrtBackendOptions): PjrtBackend {
  try {
    return new PjrtBackend(options);
  } catch (error) {
    throw asXlaserveError(error, "PJRT_ERROR");
  }
}
