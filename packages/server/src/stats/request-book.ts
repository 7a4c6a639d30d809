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
}

export class RequestBook {
  private readonly byModel = new Map<string, RequestFigures>();

  /** The figures of one model, created on first use (callers may keep the object). */
  entry(model: string): RequestFigures {
    let e = this.byModel.get(model);
    if (!e) {
      e = { success: { count: 0, ns: 0 }, fail: { count: 0, ns: 0 }, lastInference: 0 };
      this.byModel.set(model, e);
    }
    return e;
  }

  get(model: string): RequestFigures | undefined {
    return this.byModel.get(model);
  }
}

/** Adds one answered request to `e`. */
export function recordRequest(e: RequestFigures, ok: boolean, seconds: number): void {
  const d = ok ? e.success : e.fail;
  d.count++;
  d.ns += Math.round(seconds * 1e9);
  e.lastInference = Date.now();
}
