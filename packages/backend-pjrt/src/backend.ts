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
import { LoadPool } from "./runtime/load-pool.ts";
import { clearMemoryStats, deviceMemoryStats } from "./runtime/memory.ts";
import { AUTO_POLL_MS, type EventWait } from "./runtime/events.ts";
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
   * How long "auto" polls before it hands a wait to OnReady (default AUTO_POLL_MS). Longer keeps
   * the JS thread spinning on longer work; tests raise it so a slow machine's turns cannot push
   * short work over to OnReady.
   */
  readonly autoPollMs?: number;
  /**
   * The plugin file's content hash (identity.ts pluginFileHash) when the caller already knows it:
   * hashing reads the whole plugin (several hundred MB), and a backend hosted on another thread
   * has no other way to reuse the caller's memo.
   */
  readonly pluginFileHash?: string;
  /** Milliseconds a child compile may take before it is killed. */
  readonly compileTimeoutMs?: number;
  /**
   * Threads that load programs (PJRT_Executable_DeserializeAndLoad, also after a child compile)
   * into the client, started with the backend. A load is CPU work inside the plugin (about 45 ms
   * for ResNet-50) and loads on several threads overlap, so a restart's programs load side by side
   * and none holds up executions. Default 4; 0 loads on the calling thread.
   */
  readonly loadThreads?: number;
  /**
   * Loader threads map in, when they start, what a process's first load would otherwise fault in
   * a page at a time: the plugin's code (MADV_POPULATE_READ) and 16 MiB of each thread's malloc
   * arena, kept by turning glibc's heap trimming off. ResNet-50's first load in a fresh process
   * took about 3,500 minor faults (13.6 MB heap, 1.9 MB plugin code) and 8-12 ms more than later
   * loads; with this about 100 (bench/results/pjrt-first-load-faults-*). Default true.
   */
  readonly prefaultLoads?: boolean;
  /**
   * Extra copies of a load run on loader threads left idle (load-pool.ts hedge); the first copy
   * loaded is kept, the others destroyed when they finish. Loads asked for together each get a
   * thread first, so copies only use threads that would otherwise sit idle. A load's time depends
   * on the vCPU it lands on: on the H200 host one extra copy brought ResNet-50's first load in a
   * fresh process from 32-43 ms to 28-32.5 ms (medians, bench/results/pjrt-hedged-loads-*).
   * Default 1; 0 runs every load once.
   */
  readonly hedgeLoads?: number;
}

const DEFAULTS = { loadThreads: 4, hedgeLoads: 1 } as const;

/** A count option (loadThreads, hedgeLoads) or its default, checked. */
function countOption(options: PjrtBackendOptions, name: keyof typeof DEFAULTS): number {
  const value = options[name] ?? DEFAULTS[name];
  if (!(Number.isInteger(value) && value >= 0)) {
    throw new XlaserveError("CONFIG_INVALID", `${name} must be an integer >= 0, got ${value}`);
  }
  return value;
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
  private disposing: Promise<void> | null = null;
  /** Null with loadThreads 0: loads then run on the calling thread. */
  private readonly loader: LoadPool | null;
  /** Loads handed to the loader and not yet adopted or refused; settle, never reject. */
  private readonly loading = new Set<Promise<void>>();
  /** Aborted on dispose: kills compile children still running. */
  private readonly compiling = new AbortController();

  /**
   * Milliseconds of each start-up step (dlopen and gate, PJRT_Plugin_Initialize, attributes,
   * PJRT_Client_Create), for the load log and the first-result benchmark: start-up is most of a
   * cold start's time and these say which part.
   */
  readonly startupMs: { open: number; initialize: number; attributes: number; client: number };

  constructor(options: PjrtBackendOptions) {
    this.options = options;
    const loadThreads = countOption(options, "loadThreads");
    const hedgeLoads = countOption(options, "hedgeLoads");
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
    // The loader threads start before the client, whose creation (about 240 ms on the H200) gives
    // them time to start, open the plugin and map in what a first load touches.
    this.loader =
      loadThreads > 0
        ? new LoadPool({
            pluginPath: options.pluginPath,
            size: loadThreads,
            prefault: options.prefaultLoads === false ? undefined : { code: true, heapBytes: 16 << 20 },
            hedge: hedgeLoads,
            // Only ever called after the client exists: a copy finishes after its job was given out.
            discard: (handle) => new PjrtExecutable(this.client, handle).dispose(),
          })
        : null;
    this.loader?.prestart();
    this.client = PjrtClient.create(this.api, clientOptionsFor(options));
    this.client.eventWait = { mode: options.eventWait ?? "auto", autoPollMs: options.autoPollMs ?? AUTO_POLL_MS };
    this.startupMs = { open, initialize, attributes, client: lap() };
  }

  /** Resolves when the loader threads have started and opened the plugin (at once without). */
  async loadersReady(): Promise<void> {
    await this.loader?.ready();
  }

  /** Resolves once every spare copy of a hedged load has finished and been destroyed. */
  async settleBackground(): Promise<void> {
    await this.loader?.spareCopiesDone();
  }

  /** What each loader thread reported when it opened the plugin. */
  get loaderReports(): readonly unknown[] {
    return this.loader?.openReports ?? [];
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
        signal: this.compiling.signal,
      });
      return this.load(serialized, proto);
    }
    return compileModule(client, module, proto);
  }

  async serialize(executable: Executable): Promise<Uint8Array> {
    return ownedBy(executable, PjrtExecutable, "executable").serialize();
  }

  async deserialize(bytes: Uint8Array, options: CompileOptions): Promise<Executable> {
    return this.load(bytes, compileOptionsProto(options));
  }

  /** DeserializeAndLoad on a loader thread, or on this one with loadThreads 0. */
  private async load(bytes: Uint8Array, proto: Uint8Array): Promise<PjrtExecutable> {
    const client = this.live();
    if (!this.loader) return deserializeExecutable(client, bytes, proto);
    const loaded = this.loader.load(client.handle, bytes, proto).then((handle) => {
      // Adopted even when dispose began meanwhile, so that destroying it goes the usual way; the
      // client is still alive, as dispose waits for this continuation.
      const executable = new PjrtExecutable(client, handle);
      if (this.disposed) {
        executable.dispose();
        throw new XlaserveError("DISPOSED", "the PJRT backend was disposed while the program was loading");
      }
      return executable;
    });
    const settled = loaded.then(
      () => {},
      () => {},
    );
    this.loading.add(settled);
    void settled.then(() => this.loading.delete(settled));
    return loaded;
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

  /**
   * Refuses new calls (DISPOSED), kills compile children still running (their compiles fail with
   * DISPOSED), lets the loads in flight finish and destroys what they load, stops the loader
   * threads, then destroys the client and whatever it still owns.
   */
  dispose(): Promise<void> {
    this.disposing ??= this.shutDown();
    return this.disposing;
  }

  private async shutDown(): Promise<void> {
    this.disposed = true;
    this.compiling.abort();
    // A loader thread may be inside the plugin with this client: it must outlive them.
    await Promise.all([this.loader?.close(), ...this.loading]);
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
