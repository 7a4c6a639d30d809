/**
 * The engine thread: hosts a backend inside a Bun Worker and services the calls that
 * threaded-backend.ts forwards, so a CPU engine's compute never runs on the HTTP event loop.
 * Every reply carries the backend's memory figures, so the proxy's synchronous memoryStats() is
 * current as of the last call.
 */
import type { AbstractBackend, DeviceBuffer, Executable, HostTensor } from "@xlaserve/core";
import { isXlaserveError, uploadAll, viewTyped } from "@xlaserve/core";
import { createFromSpec } from "../engine/backend-spec.ts";
import { BatchBuffers } from "./batch-buffers.ts";
import { openMappedInput } from "./mapped-inputs.ts";
import { type RunCall, type RunReply, decodeRunCalls, encodeRunReplies, isRunCalls, transferFor } from "./run-wire.ts";

declare const self: Worker;

let backend: AbstractBackend | null = null;
const buffers = new Map<number, DeviceBuffer>();
const executables = new Map<number, Executable>();
let nextHandle = 1;

interface WireTensor {
  dtype: HostTensor["dtype"];
  shape: number[];
  bytes: ArrayBuffer;
}

function fromWire(t: WireTensor): HostTensor {
  const size = t.bytes.byteLength;
  const elem = t.shape.reduce((a, b) => a * b, 1);
  return { dtype: t.dtype, shape: t.shape, data: viewTyped(t.dtype, t.bytes, 0, elem || (size === 0 ? 0 : elem)) };
}

function toWire(t: HostTensor): { wire: WireTensor; transfer: ArrayBuffer[] } {
  const d = t.data;
  // A private copy that can be transferred (the backend may keep the original).
  const copy = new Uint8Array(d.byteLength);
  copy.set(new Uint8Array(d.buffer, d.byteOffset, d.byteLength));
  return { wire: { dtype: t.dtype, shape: [...t.shape], bytes: copy.buffer }, transfer: [copy.buffer] };
}

function stats() {
  try {
    return backend?.memoryStats() ?? null;
  } catch {
    return null;
  }
}

function bufferMeta(handle: number, b: DeviceBuffer) {
  return { handle, dtype: b.dtype, shape: [...b.shape], byteLength: b.byteLength, device: b.device };
}

function need<T>(map: Map<number, T>, handle: number, what: string): T {
  const v = map.get(handle);
  if (!v) throw new Error(`${what} ${handle} is not known to the engine thread`);
  return v;
}

async function handle(msg: Record<string, unknown>): Promise<{ value?: unknown; transfer?: ArrayBuffer[] }> {
  const op = msg.op as string;
  if (op === "init") {
    backend = await createFromSpec({ module: msg.module as string, export: msg.export as string, args: msg.args });
    return {
      value: {
        name: backend.name,
        identity: backend.identity(),
        devices: backend.devices(),
        settles: typeof backend.settleBackground === "function",
        serialCompute: backend.serialCompute === true,
      },
    };
  }
  const be = backend;
  if (!be) throw new Error("the engine thread has no backend");
  switch (op) {
    case "upload": {
      const b = await be.upload(fromWire(msg.tensor as WireTensor), msg.device as number | undefined);
      const h = nextHandle++;
      buffers.set(h, b);
      return { value: bufferMeta(h, b) };
    }
    case "download": {
      const t = await be.download(need(buffers, msg.handle as number, "buffer"));
      const { wire, transfer } = toWire(t);
      return { value: wire, transfer };
    }
    case "disposeBuffer": {
      buffers.get(msg.handle as number)?.dispose();
      buffers.delete(msg.handle as number);
      return {};
    }
    case "compile": {
      const exe = await be.compile(
        {
          bytes: new Uint8Array(msg.bytes as ArrayBuffer),
          format: msg.format as "text" | "bytecode",
          origin: msg.origin as string,
        },
        msg.options as object,
      );
      const h = nextHandle++;
      executables.set(h, exe);
      return { value: { handle: h, outputCount: exe.outputCount } };
    }
    case "deserialize": {
      const exe = await be.deserialize(new Uint8Array(msg.bytes as ArrayBuffer), msg.options as object);
      const h = nextHandle++;
      executables.set(h, exe);
      return { value: { handle: h, outputCount: exe.outputCount } };
    }
    case "serialize": {
      const bytes = await be.serialize(need(executables, msg.handle as number, "program"));
      const copy = bytes.slice();
      return { value: copy.buffer, transfer: [copy.buffer] };
    }
    case "disposeExecutable": {
      executables.get(msg.handle as number)?.dispose();
      executables.delete(msg.handle as number);
      return {};
    }
    case "execute": {
      const exe = need(executables, msg.handle as number, "program");
      const args = (msg.args as number[]).map((h) => need(buffers, h, "buffer"));
      const out = await be.execute(exe, args);
      return {
        value: out.map((b) => {
          const h = nextHandle++;
          buffers.set(h, b);
          return bufferMeta(h, b);
        }),
      };
    }
    case "run": {
      // A run call in a mixed batch (the packed path is serveRunBatch): answered as host tensors,
      // the same value the packed reply decodes to.
      const outputs = await runOnce(be, {
        id: 0,
        handle: msg.handle as number,
        inputs: (msg.inputs as WireTensor[]).map(fromWire),
        resident: msg.resident as number[],
      });
      const owned = outputs.map((t) => ({ dtype: t.dtype, shape: [...t.shape], data: t.data.slice() }));
      return { value: owned, transfer: owned.map((t) => t.data.buffer as ArrayBuffer) };
    }
    case "time": {
      // Times a program here, off the HTTP event loop, for inline-runs.ts: runs until `maxRuns`
      // or `budgetMs` is spent, each run as the request path does it (upload, execute, download).
      const call: RunCall = {
        id: 0,
        handle: msg.handle as number,
        inputs: (msg.inputs as WireTensor[]).map(fromWire),
        resident: msg.resident as number[],
      };
      const deadline = performance.now() + (msg.budgetMs as number);
      const us: number[] = [];
      while (us.length < (msg.maxRuns as number) && performance.now() < deadline) {
        const t0 = performance.now();
        await runOnce(be, call);
        us.push((performance.now() - t0) * 1000);
      }
      return { value: us };
    }
    case "resetPeakMemory":
      be.resetPeakMemory(msg.device as number | undefined);
      return {};
    case "memoryStats":
      return {};
    case "settleBackground":
      await be.settleBackground?.();
      return {};
    case "dispose":
      for (const b of buffers.values()) b.dispose();
      for (const e of executables.values()) e.dispose();
      buffers.clear();
      executables.clear();
      await be.dispose();
      backend = null;
      return {};
    default:
      throw new Error(`unknown engine-thread op ${op}`);
  }
}

/** upload + execute + download + free in one round trip (the request path). */
async function runOnce(be: AbstractBackend, call: RunCall): Promise<HostTensor[]> {
  const exe = need(executables, call.handle, "program");
  const uploaded: DeviceBuffer[] = [];
  let out: DeviceBuffer[] = [];
  try {
    uploaded.push(...(await uploadAll(be, call.inputs)));
    const resident = call.resident.map((h) => need(buffers, h, "buffer"));
    out = await be.execute(exe, [...uploaded, ...resident]);
    return await Promise.all(out.map((b) => be.download(b)));
  } finally {
    for (const b of uploaded) b.dispose();
    for (const b of out) b.dispose();
  }
}

function wireError(err: unknown): { code: string; message: string; details: Record<string, unknown> } {
  return isXlaserveError(err)
    ? { code: err.code, message: err.message, details: err.details }
    : { code: "INTERNAL", message: err instanceof Error ? err.message : String(err), details: {} };
}

/** Coalesced inputs are joined into these (batch-buffers.ts), each back once its run is over. */
const batchBuffers = new BatchBuffers();
const takeBatchBuffer = (byteLength: number) => batchBuffers.take(byteLength);

/**
 * A packed batch of run calls (the request path), answered packed. The calls run concurrently: on
 * a device, one request's copies overlap another's execution; the CPU engine computes each call
 * synchronously inside execute, so its results and their bits are the same in any order.
 */
async function serveRunBatch(packed: ArrayBuffer | ArrayBuffer[]): Promise<void> {
  const replies: RunReply[] = await Promise.all(
    decodeRunCalls(packed, openMappedInput, takeBatchBuffer).map(async (call): Promise<RunReply> => {
      try {
        const be = backend;
        if (!be) throw new Error("the engine thread has no backend");
        if (call.failure !== undefined) throw call.failure;
        return { id: call.id, ok: true, outputs: await runOnce(be, call) };
      } catch (err) {
        return { id: call.id, ok: false, error: wireError(err) };
      } finally {
        // The run is over (upload() resolved only once the backend was done with the bytes).
        for (const t of call.inputs) batchBuffers.give(t.data.buffer as ArrayBuffer);
      }
    }),
  );
  const reply = encodeRunReplies(replies, stats());
  self.postMessage(reply, transferFor(reply));
}

// One call at a time, in arrival order: a peak reset lands exactly between the calls around it.
// Calls arrive in batches (threaded-backend.ts) and are answered with one message per batch.
let chain: Promise<void> = Promise.resolve();

self.onmessage = (event: MessageEvent) => {
  const data = event.data as unknown;
  if (isRunCalls(data)) {
    chain = chain.then(() => serveRunBatch(data));
    return;
  }
  const { calls } = data as { calls: Record<string, unknown>[] };
  chain = chain.then(() => serveBatch(calls));
};

/**
 * Compiles, program loads and waits for a load's spare copies are answered on their own, when
 * they finish, instead of holding the calls behind them: a PJRT compile waits seconds on its child
 * process, a load and its spare copies run on the backend's loader threads, and meanwhile every
 * other model's requests keep being served. Each starts in its place in the order (so a later
 * dispose or peak reset still follows it); compiles run one at a time, since concurrent
 * autotuning on one device measures each kernel under the other's load and stacks their scratch
 * memory.
 */
const detachedOps = new Set(["compile", "deserialize", "settleBackground"]);
let compiles: Promise<unknown> = Promise.resolve();

function startDetached(msg: Record<string, unknown>): void {
  const id = msg.id as number;
  const run = msg.op === "compile" ? compiles.then(() => handle(msg)) : handle(msg);
  if (msg.op === "compile") compiles = run.catch(() => {});
  run.then(
    (r) => self.postMessage({ detached: { id, ok: true, value: r.value }, stats: stats() }, r.transfer ?? []),
    (err) => self.postMessage({ detached: { id, ok: false, error: wireError(err) }, stats: stats() }),
  );
}

async function serveBatch(calls: Record<string, unknown>[]): Promise<void> {
  const replies: unknown[] = [];
  const transfer: ArrayBuffer[] = [];
  // Uploads next to each other in a batch (a model's weights) are started together when the
  // batch reaches them, so a device backend's copies overlap; each is answered in its place.
  const started = new Map<Record<string, unknown>, ReturnType<typeof handle>>();
  const startUploadsFrom = (i: number) => {
    for (let j = i; j < calls.length && calls[j]?.op === "upload"; j++) {
      const msg = calls[j] as Record<string, unknown>;
      const pending = handle(msg);
      pending.catch(() => {}); // awaited in order below
      started.set(msg, pending);
    }
  };
  for (const [i, msg] of calls.entries()) {
    const id = msg.id as number;
    if (msg.op === "upload" && !started.has(msg)) startUploadsFrom(i);
    if (id !== 0 && detachedOps.has(msg.op as string)) {
      startDetached(msg);
      continue;
    }
    try {
      const r = await (started.get(msg) ?? handle(msg));
      if (id !== 0) replies.push({ id, ok: true, value: r.value });
      if (r.transfer && id !== 0) transfer.push(...r.transfer);
    } catch (err) {
      replies.push({ id, ok: false, error: wireError(err) });
    }
  }
  self.postMessage({ replies, stats: stats() }, transfer);
}
