/**
 * Every answered infer request, by model name: the one count that the statistics extension's
 * success / fail figures and /metrics' request series both come from. Kept by name, not by
 * model version, so a reload does not reset it; every failure counts, wherever it happened
 * (a malformed body, a full queue, the model itself).
 */
export interface RequestFigures {
  readonly success: { count: number; ns: number };
  readonly fail: { count: number; ns: number };
  /** Milliseconds since the epoch of the last answered request. */
  lastInference: number;
  /** The last failure's status and message (for the status page's events), or null. */
  lastError: { t: number; status: string; message: string } | null;
}

export class RequestBook {
  private readonly byModel = new Map<string, RequestFigures>();

  /** The figures of one model, created on first use (callers may keep the object). */
  entry(model: string): RequestFigures {
    let e = this.byModel.get(model);
    if (!e) {
      e = { success: { count: 0, ns: 0 }, fail: { count: 0, ns: 0 }, lastInference: 0, lastError: null };
      this.byModel.set(model, e);
    }
    return e;
  }

  get(model: string): RequestFigures | undefined {
    return this.byModel.get(model);
  }
}

/** Adds one answered request to `e` (a failure with its status and, where known, its message). */
export function recordRequest(e: RequestFigures, ok: boolean, seconds: number, status = "", error?: string): void {
  const d = ok ? e.success : e.fail;
  d.count++;
  d.ns += Math.round(seconds * 1e9);
  e.lastInference = Date.now();
  if (!ok && error !== undefined) e.lastError = { t: e.lastInference, status, message: error };
}
