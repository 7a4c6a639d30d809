import type {
  AbstractBackend,
  BackendIdentity,
  BackendName,
  CompileOptions,
  DeviceBuffer,
  DeviceInfo,
  Executable,
  HostTensor,
  MemoryStats,
  ModuleSource,
} from "@xlaserve/core";
import { XlaserveError, viewTyped } from "@xlaserve/core";
import { type BackendSpec, createFromSpec } from "../engine/backend-spec.ts";
import { type RunCall, decodeRunReplies, encodeRunCalls, isRunReplies } from "./run-wire.ts";

interface Reply {
  id: number;
  ok: boolean;
  value?: unknown;
  error?: { code: string; message: string; details: Record<string, unknown> };
}

interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

interface BufferMeta {
  handle: number;
  dtype: HostTensor["dtype"];
  shape: number[];
  byteLength: number;
  device: number;
}

class ThreadBuffer implements DeviceBuffer {
  private disposed = false;
  readonly dtype: HostTensor["dtype"];
  readonly shape: readonly number[];
  readonly byteLength: number;
  readonly device: number;
  readonly handle: number;
  constructor(
    private readonly owner: ThreadedBackend,
    meta: BufferMeta,
  ) {
    this.handle = meta.handle;
    this.dtype = meta.dtype;
    this.shape = meta.shape;
    this.byteLength = meta.byteLength;
    this.device = meta.device;
  }
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.owner.post("disposeBuffer", { handle: this.handle });
  }
  [Symbol.dispose](): void {
    this.dispose();
  }
}

class ThreadExecutable implements Executable {
  private disposed = false;
  constructor(
    private readonly owner: ThreadedBackend,
    readonly handle: number,
    readonly outputCount: number,
  ) {}
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.owner.post("disposeExecutable", { handle: this.handle });
  }
  [Symbol.dispose](): void {
    this.dispose();
  }
}

/**
 * An AbstractBackend whose engine runs on its own thread (a Bun Worker hosting engine-thread/thread.ts):
 * the CPU engine computes in JavaScript and native BLAS, and PJRT's execute call launches kernels
 * on the calling thread; on the HTTP event loop either would stall every other request. Calls are forwarded in order; buffers and programs are handles.
 * memoryStats() is synchronous in the interface, so it returns the figures the engine reported
 * with its last reply; `refreshMemoryStats()` waits for every earlier call to land first, except
 * compiles and program loads, which the engine answers on their own when they finish (the
 * registry never probes while either is in flight: they hold its device lock shared).
 */
export class ThreadedBackend implements AbstractBackend {
  private readonly worker: Worker;
  private twin: Promise<AbstractBackend> | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private stats: MemoryStats = { inUseBytes: 0, peakBytes: 0, limitBytes: null };
  private info: {
    name: BackendName;
    identity: BackendIdentity;
    devices: DeviceInfo[];
    /** Whether the engine's backend has background work to settle (settleBackground). */
    settles: boolean;
    /** The engine computes one call at a time, to the end (AbstractBackend.serialCompute). */
    serialCompute: boolean;
  } | null = null;
  private closed = false;
  private failure: XlaserveError | null = null;
  /** Calls waiting for the batch in flight to come back: control calls or packed run calls. */
  private outbox: Array<Record<string, unknown> | RunCall> = [];
  private outboxTransfer: ArrayBuffer[] = [];
  /** A batch is with the engine thread (its answer not back yet). */
  private inFlight = false;
  /** Input bytes of run calls so far: transferred without a copy, and copied (run-wire.ts). */
  private readonly handover = { movedBytes: 0, copiedBytes: 0 };

  private constructor() {
    this.worker = new Worker(new URL("./thread.ts", import.meta.url).href);
    this.worker.onmessage = (event: MessageEvent) => {
      if (isRunReplies(event.data)) {
        const { replies, stats } = decodeRunReplies(event.data);
        if (stats) this.stats = stats;
        this.inFlight = false;
        this.flush();
        for (const r of replies) {
          const p = this.pending.get(r.id);
          if (!p) continue;
          this.pending.delete(r.id);
          if (r.ok) p.resolve(r.outputs);
          else p.reject(new XlaserveError(r.error.code as XlaserveError["code"], r.error.message, r.error.details));
        }
        return;
      }
      if ((event.data as { detached?: Reply }).detached) {
        // A compile or load answered on its own (engine-thread/thread.ts): the batch it came in has
        // already been answered, so the flow of batches is not touched.
        const { detached, stats } = event.data as { detached: Reply; stats: MemoryStats | null };
        if (stats) this.stats = stats;
        this.settle(detached);
        return;
      }
      const batch = event.data as { replies: Reply[]; stats: MemoryStats | null };
      if (batch.stats) this.stats = batch.stats;
      this.inFlight = false;
      // Settle after sending what queued meanwhile: the engine starts on it while these resolve.
      this.flush();
      for (const msg of batch.replies) this.settle(msg);
    };
    this.worker.onerror = (event) => {
      // The engine is gone: fail what waits and everything after, rather than hang.
      const err = new XlaserveError("INTERNAL", `engine thread failed: ${event.message}`);
      this.failure = err;
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
    };
  }

  private settle(msg: Reply): void {
    const p = this.pending.get(msg.id);
    if (!p) return;
    this.pending.delete(msg.id);
    if (msg.ok) p.resolve(msg.value);
    else {
      const e = msg.error ?? { code: "INTERNAL", message: "engine thread error", details: {} };
      p.reject(new XlaserveError(e.code as XlaserveError["code"], e.message, e.details));
    }
  }

  static async create(spec: BackendSpec): Promise<ThreadedBackend> {
    const b = new ThreadedBackend();
    try {
      b.info = (await b.call("init", {
        module: spec.module,
        export: spec.export,
        args: spec.args,
      })) as ThreadedBackend["info"];
    } catch (err) {
      b.worker.terminate();
      throw err;
    }
    if (b.serialCompute) b.offerTwin(spec);
    return b;
  }

  /**
   * The same engine once more, on this thread, created on first use: programs short enough to
   * run inline (inline/) run on it. Disposed with this backend. Present only for an engine that
   * computes serially (the CPU engine): a second PJRT instance would be another device context
   * with memory of its own.
   */
  localTwin?: () => Promise<AbstractBackend>;

  get serialCompute(): boolean {
    return this.info?.serialCompute ?? false;
  }

  private offerTwin(spec: BackendSpec): void {
    this.localTwin = () => {
      if (this.closed) return Promise.reject(new XlaserveError("DISPOSED", "the backend was disposed"));
      this.twin ??= createFromSpec(spec);
      return this.twin;
    };
  }

  /** Fire-and-forget (ordered with the calls around it). */
  post(op: string, payload: Record<string, unknown> = {}): void {
    if (this.closed) return;
    this.send({ id: 0, op, ...payload }, []);
  }

  call(op: string, payload: Record<string, unknown> = {}, transfer: ArrayBuffer[] = []): Promise<unknown> {
    return this.request((id) => ({ id, op, ...payload }), transfer);
  }

  /** Queues the message `make` builds for a fresh id; settles with the engine's answer to it. */
  private request(make: (id: number) => Record<string, unknown> | RunCall, transfer: ArrayBuffer[]): Promise<unknown> {
    if (this.closed) return Promise.reject(new XlaserveError("DISPOSED", "the backend was disposed"));
    if (this.failure) return Promise.reject(this.failure);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.send(make(id), transfer);
    });
  }

  /**
   * Messages go in batches, in order: at most one batch is with the engine at a time, and what is
   * called meanwhile waits here and leaves as one message when its answer comes back. Idle, a call
   * leaves at once; under load one postMessage and one thread wake-up serve several requests (the
   * engine runs them one at a time either way, each on its own program, so answers are unchanged).
   */
  private send(msg: Record<string, unknown> | RunCall, transfer: ArrayBuffer[]): void {
    this.outbox.push(msg);
    for (const t of transfer) this.outboxTransfer.push(t);
    if (!this.inFlight) this.flush();
  }

  private flush(): void {
    if (this.inFlight || this.outbox.length === 0 || this.closed) return;
    const calls = this.outbox;
    const transfer = this.outboxTransfer;
    this.outbox = [];
    this.outboxTransfer = [];
    this.inFlight = true;
    // The request path's batches (run calls only) travel packed; anything else as objects, with
    // run calls spelled out, so the order of a mixed batch holds.
    if (calls.every(isRunCall)) {
      const packed = encodeRunCalls(calls);
      this.handover.movedBytes += packed.movedBytes;
      this.handover.copiedBytes += packed.copiedBytes;
      this.worker.postMessage(packed.message, packed.transfer);
      return;
    }
    const objects = calls.map((c) => (isRunCall(c) ? runCallObject(c) : c));
    this.worker.postMessage({ calls: objects }, transfer);
  }

  get name(): BackendName {
    return this.info?.name ?? "reactant";
  }

  identity(): BackendIdentity {
    if (!this.info) throw new XlaserveError("INTERNAL", "engine thread not initialised");
    return this.info.identity;
  }

  devices(): readonly DeviceInfo[] {
    return this.info?.devices ?? [];
  }

  async upload(tensor: HostTensor, device?: number): Promise<DeviceBuffer> {
    const d = tensor.data;
    const copy = new Uint8Array(d.byteLength);
    copy.set(new Uint8Array(d.buffer, d.byteOffset, d.byteLength));
    const meta = (await this.call(
      "upload",
      { tensor: { dtype: tensor.dtype, shape: [...tensor.shape], bytes: copy.buffer }, device },
      [copy.buffer],
    )) as BufferMeta;
    return new ThreadBuffer(this, meta);
  }

  async download(buffer: DeviceBuffer): Promise<HostTensor> {
    const w = (await this.call("download", { handle: (buffer as ThreadBuffer).handle })) as {
      dtype: HostTensor["dtype"];
      shape: number[];
      bytes: ArrayBuffer;
    };
    const n = w.shape.reduce((a, b) => a * b, 1);
    return { dtype: w.dtype, shape: w.shape, data: viewTyped(w.dtype, w.bytes, 0, n) };
  }

  async compile(module: ModuleSource, options: CompileOptions): Promise<Executable> {
    const bytes = module.bytes.slice();
    const r = (await this.call(
      "compile",
      { bytes: bytes.buffer, format: module.format, origin: module.origin, options },
      [bytes.buffer],
    )) as { handle: number; outputCount: number };
    return new ThreadExecutable(this, r.handle, r.outputCount);
  }

  async serialize(executable: Executable): Promise<Uint8Array> {
    const buf = (await this.call("serialize", { handle: (executable as ThreadExecutable).handle })) as ArrayBuffer;
    return new Uint8Array(buf);
  }

  async deserialize(bytes: Uint8Array, options: CompileOptions): Promise<Executable> {
    const copy = bytes.slice();
    const r = (await this.call("deserialize", { bytes: copy.buffer, options }, [copy.buffer])) as {
      handle: number;
      outputCount: number;
    };
    return new ThreadExecutable(this, r.handle, r.outputCount);
  }

  async execute(executable: Executable, args: readonly DeviceBuffer[]): Promise<DeviceBuffer[]> {
    const metas = (await this.call("execute", {
      handle: (executable as ThreadExecutable).handle,
      args: args.map((a) => (a as ThreadBuffer).handle),
    })) as BufferMeta[];
    return metas.map((m) => new ThreadBuffer(this, m));
  }

  /**
   * One request in one round trip: uploads `inputs`, runs the program on them followed by the
   * resident `weights`, downloads every result and frees the temporaries.
   */
  async run(
    executable: Executable,
    inputs: readonly HostTensor[],
    weights: readonly DeviceBuffer[],
  ): Promise<HostTensor[]> {
    const handle = (executable as ThreadExecutable).handle;
    const resident = weights.map((w) => (w as ThreadBuffer).handle);
    // Packed when the batch leaves (encodeRunCalls copies the small inputs then; large ones in
    // buffers noted movable are transferred, their views here detached from then on).
    return (await this.request((id): RunCall => ({ id, handle, inputs, resident }), [])) as HostTensor[];
  }

  /**
   * Times `executable` on the engine thread (see inline-runs.ts): each run's microseconds, run
   * after run until `maxRuns` or `budgetMs` is spent. The engine is busy with it meanwhile.
   */
  async timeRuns(
    executable: Executable,
    inputs: readonly HostTensor[],
    weights: readonly DeviceBuffer[],
    maxRuns: number,
    budgetMs: number,
  ): Promise<number[]> {
    const wire = inputs.map((t) => {
      const copy = new Uint8Array(t.data.byteLength);
      copy.set(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength));
      return { dtype: t.dtype, shape: [...t.shape], bytes: copy.buffer };
    });
    return (await this.call("time", {
      handle: (executable as ThreadExecutable).handle,
      resident: weights.map((w) => (w as ThreadBuffer).handle),
      inputs: wire,
      maxRuns,
      budgetMs,
    })) as number[];
  }

  inputHandover(): { readonly movedBytes: number; readonly copiedBytes: number } {
    return { ...this.handover };
  }

  memoryStats(): MemoryStats {
    return this.stats;
  }

  /** Waits for every earlier call (disposals included) so memoryStats() is exact. */
  async refreshMemoryStats(): Promise<MemoryStats> {
    await this.call("memoryStats");
    return this.stats;
  }

  /** Waits for the engine's backend to finish what it does on its own (spare load copies). */
  async settleBackground(): Promise<void> {
    if (this.info?.settles) await this.call("settleBackground");
  }

  resetPeakMemory(device?: number): void {
    this.post("resetPeakMemory", { device });
    this.stats = { ...this.stats, peakBytes: this.stats.inUseBytes };
  }

  async dispose(): Promise<void> {
    if (this.closed) return;
    try {
      await this.call("dispose");
    } catch {
      // already gone
    }
    this.closed = true;
    this.worker.terminate();
    // A compile or load answered on its own (engine-thread/thread.ts) may still have been running: its
    // answer will never come now, and a caller waiting on it must not wait forever.
    const gone = new XlaserveError("DISPOSED", "the backend was disposed while this call was in progress");
    for (const p of this.pending.values()) p.reject(gone);
    this.pending.clear();
    const twin = this.twin;
    this.twin = null;
    if (twin) await twin.then((t) => t.dispose()).catch(() => {});
  }
}

function isRunCall(c: Record<string, unknown> | RunCall): c is RunCall {
  return (c as RunCall).inputs !== undefined && (c as Record<string, unknown>).op === undefined;
}

/** A run call in the object form (mixed batches): inputs as transferable private copies. */
function runCallObject(c: RunCall): Record<string, unknown> {
  return {
    id: c.id,
    op: "run",
    handle: c.handle,
    resident: c.resident,
    inputs: c.inputs.map((t) => {
      const d = t.data;
      const copy = new Uint8Array(d.byteLength);
      copy.set(new Uint8Array(d.buffer, d.byteOffset, d.byteLength));
      return { dtype: t.dtype, shape: [...t.shape], bytes: copy.buffer };
    }),
  };
}
