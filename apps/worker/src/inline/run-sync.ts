import type { AbstractBackend, DeviceBuffer, Executable, HostTensor } from "@xlaserve/core";
import { XlaserveError } from "@xlaserve/core";

/**
 * A promise's outcome now. The CPU engine's calls are async in the interface but compute before
 * they return; reading the settled value directly (Bun.peek) keeps an inline run free of awaits,
 * so nothing else interleaves with it. A call still pending means the engine is not synchronous,
 * and it cannot run inline.
 */
export function settledNow<T>(promise: Promise<T>): T {
  switch (Bun.peek.status(promise)) {
    case "fulfilled":
      return Bun.peek(promise) as T;
    case "rejected": {
      const reason = Bun.peek(promise);
      promise.catch(() => {}); // observed here: not an unhandled rejection
      throw reason;
    }
    default:
      promise.catch(() => {});
      throw new XlaserveError("INTERNAL", "the engine did not compute synchronously, so it cannot run inline");
  }
}

export function runSync(
  twin: AbstractBackend,
  local: Executable,
  inputs: readonly HostTensor[],
  weights: readonly DeviceBuffer[],
): HostTensor[] {
  const args: DeviceBuffer[] = [];
  let results: DeviceBuffer[] = [];
  try {
    for (const t of inputs) args.push(settledNow(twin.upload(t)));
    for (const w of weights) args.push(w);
    results = settledNow(twin.execute(local, args));
    const out = new Array<HostTensor>(results.length);
    for (let i = 0; i < results.length; i++) out[i] = settledNow(twin.download(results[i] as DeviceBuffer));
    return out;
  } finally {
    for (let i = 0; i < inputs.length; i++) args[i]?.dispose();
    for (const r of results) r.dispose();
  }
}

export function sameBytes(a: readonly HostTensor[], b: readonly HostTensor[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as HostTensor;
    const y = b[i] as HostTensor;
    if (x.dtype !== y.dtype || x.shape.length !== y.shape.length || x.shape.some((d, k) => d !== y.shape[k])) {
      return false;
    }
    const xb = new Uint8Array(x.data.buffer, x.data.byteOffset, x.data.byteLength);
    const yb = new Uint8Array(y.data.buffer, y.data.byteOffset, y.data.byteLength);
    if (xb.byteLength !== yb.byteLength) return false;
    for (let k = 0; k < xb.byteLength; k++) if (xb[k] !== yb[k]) return false;
  }
  return true;
}
