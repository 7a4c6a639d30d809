import type { AbstractBackend, DeviceBuffer, Executable, HostTensor } from "@xlaserve/core";
import { XlaserveError } from "@xlaserve/core";

/**
 * Programs short enough to run on the HTTP thread itself. The CPU engine's own thread costs every
 * request two cross-thread messages and two thread wake-ups (about 30 us of CPU per request on
 * the 2-core bench machine, wrk on the MLP), more than a small program's whole run (the MLP at
 * batch 1: about 12 us). A program whose measured run (upload, execute, download) stays within
 * the threshold runs inline instead, on a second instance of the same engine on this thread: the
 * event loop is then blocked no longer than that per request, while anything longer keeps
 * running on the engine thread. The same engine runs the same program, so the answers are the
 * same bytes; prepare() checks that against the engine thread before it admits a program.
 */

/** What the engine thread offers for this (threaded-backend.ts). */
export interface InlineHost {
  /** Whether localTwin() can give a second instance (false: every run stays on the engine thread). */
  readonly canRunInline: boolean;
  /** The same engine once more, on the calling thread. */
  localTwin(): Promise<AbstractBackend>;
  /** One run on the engine thread (upload, execute, download), as a request's. */
  run(executable: Executable, inputs: readonly HostTensor[], weights: readonly DeviceBuffer[]): Promise<HostTensor[]>;
  /** Each run's microseconds on the engine thread, until maxRuns or budgetMs is spent. */
  timeRuns(
    executable: Executable,
    inputs: readonly HostTensor[],
    weights: readonly DeviceBuffer[],
    maxRuns: number,
    budgetMs: number,
  ): Promise<number[]>;
}

export function isInlineHost(backend: AbstractBackend): backend is AbstractBackend & InlineHost {
  const b = backend as Partial<InlineHost>;
  return (
    b.canRunInline === true &&
    typeof b.localTwin === "function" &&
    typeof b.timeRuns === "function" &&
    typeof b.run === "function"
  );
}

/** One program that runs inline: its copy on this thread and the drift watch over its runs. */
export interface InlineProgram {
  readonly local: Executable;
  /** Median of a window of runs on this thread at preparation, microseconds. */
  readonly medianUs: number;
  /** Runs in the current window, and how many of them were slow (over DRIFT_FACTOR x the threshold). */
  runs: number;
  slow: number;
  /** Windows in a row whose median run was slow. */
  strikes: number;
}

/** What prepare() needs to know about one program. */
export interface InlineCandidate {
  readonly label: string;
  /** The engine thread's program (the key requests look programs up by). */
  readonly executable: Executable;
  /** Inputs to time it on (zeros of the program's shapes). */
  readonly inputs: readonly HostTensor[];
  /** Its run in the memory probe (milliseconds, cold), when known. */
  readonly probeMs: number | null;
  /** Times it on the engine thread (InlineHost.timeRuns with the model's weights). */
  engineTimes(maxRuns: number, budgetMs: number): Promise<number[]>;
  /** Its answer for `inputs` on the engine thread, for the byte-equality check. */
  reference(): Promise<readonly HostTensor[]>;
}

export interface InlineVerdict {
  readonly label: string;
  readonly inline: boolean;
  /** Median run on the engine thread, then on this thread (null where not measured). */
  readonly engineUs: number | null;
  readonly localUs: number | null;
  readonly reason: string;
}

/**
 * A probe run longer than this is not timed again at all: it could hold the engine thread for
 * long. Timing a program costs one run of it first (a round stops as soon as its runs are far over
 * the threshold), so the bound is what one such run may cost once per model. Not lower: the probe
 * runs a model's first program cold, engine warm-up included; the MLP's b1 probe took 13-26 ms
 * here, and at 20 ms it missed inline runs at random.
 */
const PROBE_MS_LIMIT = 100;
/**
 * Timing on the engine thread, in rounds of at most ENGINE_RUNS runs or ENGINE_ROUND_MS (it
 * serves nothing else meanwhile, so a round is short; requests run between rounds), until a
 * round's median is within the threshold, or far past it, or ENGINE_ROUNDS are done: the engine
 * thread's code can be cold too (a model loaded first).
 */
const ENGINE_RUNS = 1000;
const ENGINE_ROUND_MS = 20;
const ENGINE_ROUNDS = 10;
/**
 * Warm-up on this thread: runs in windows of WINDOW until a window's median is within the
 * threshold, for at most LOCAL_BUDGET_MS of run time. The engine's code starts cold on this
 * thread (the MLP's first run takes about 9 ms, its 1000th about 20 us), so one short timing
 * would turn most small programs away.
 */
const WINDOW = 64;
const LOCAL_BUDGET_MS = 300;
/** A round this far past the threshold ends the timing: no warm-up brings that down. */
const FAR_FACTOR = 8;
/** The warm-up yields to the event loop after this much work, so a load beside traffic stays unnoticed. */
const SLICE_MS = 2;
/**
 * Two windows in a row whose median run is past this multiple of the threshold send the program
 * back to the engine thread. Medians, not means: a run the OS preempts for one scheduler tick
 * (4 ms here) or a GC pause must not count as the program getting slower.
 */
const DRIFT_FACTOR = 4;
const DRIFT_STRIKES = 2;

export class InlineRuns {
  /** Called when a program leaves the inline path. */
  onDrift: ((label: string) => void) | null = null;

  /** Every program copy this holds, inline or sent back to the engine thread since (freed on dispose). */
  private readonly locals: readonly Executable[];

  private constructor(
    private readonly twin: AbstractBackend,
    private readonly weights: readonly DeviceBuffer[],
    private readonly programs: Map<Executable, InlineProgram & { readonly label: string }>,
    readonly maxUs: number,
    private readonly verdicts: readonly InlineVerdict[],
  ) {
    this.locals = [...programs.values()].map((p) => p.local);
  }

  /**
   * Times every candidate on the engine thread, and those within `maxUs` there again on `twin`
   * (with its own copy of the program and of the weights) after a warm-up; keeps the programs
   * whose run here is within `maxUs` and whose answer equals the engine thread's byte for byte.
   * `runs` is null when none qualifies (everything is freed again); `verdicts` say why for each
   * candidate. `stillWanted` is asked between steps: a model retired meanwhile stops it.
   */
  static async prepare(
    backend: AbstractBackend,
    twin: AbstractBackend,
    candidates: readonly InlineCandidate[],
    hostWeights: readonly HostTensor[],
    maxUs: number,
    stillWanted: () => boolean,
  ): Promise<{ runs: InlineRuns | null; verdicts: InlineVerdict[] }> {
    const verdicts: InlineVerdict[] = [];
    const programs = new Map<Executable, InlineProgram & { readonly label: string }>();
    const weights: DeviceBuffer[] = [];
    const locals: Executable[] = [];
    const no = (c: InlineCandidate, reason: string, engineUs: number | null = null, localUs: number | null = null) =>
      verdicts.push({ label: c.label, inline: false, engineUs, localUs, reason });
    try {
      for (const c of candidates) {
        if (!stillWanted()) break;
        if (c.probeMs !== null && c.probeMs > PROBE_MS_LIMIT) {
          no(c, `its probe run took ${round1(c.probeMs)} ms`);
          continue;
        }
        const engineUs = await engineMedian(c, maxUs, stillWanted);
        if (engineUs === null || engineUs > maxUs) {
          no(c, "over the threshold on the engine thread", engineUs);
          continue;
        }
        if (weights.length === 0) for (const w of hostWeights) weights.push(await twin.upload(w));
        const local = await twin.deserialize(await backend.serialize(c.executable), {});
        locals.push(local);
        const localUs = await warmUp(twin, local, c.inputs, weights, maxUs, stillWanted);
        if (localUs === null || localUs > maxUs) {
          no(c, "over the threshold on the HTTP thread after its warm-up", engineUs, localUs);
          continue;
        }
        const mine = runSync(twin, local, c.inputs, weights);
        if (!sameBytes(mine, await c.reference())) {
          no(c, "its answer differs from the engine thread's", engineUs, localUs);
          continue;
        }
        programs.set(c.executable, { label: c.label, local, medianUs: localUs, runs: 0, slow: 0, strikes: 0 });
        verdicts.push({ label: c.label, inline: true, engineUs, localUs, reason: "" });
      }
    } catch (err) {
      freeAll(weights, locals);
      throw err;
    }
    if (programs.size === 0 || !stillWanted()) {
      freeAll(weights, locals);
      return { runs: null, verdicts };
    }
    const kept = new Set([...programs.values()].map((p) => p.local));
    for (const l of locals) if (!kept.has(l)) l.dispose();
    return { runs: new InlineRuns(twin, weights, programs, maxUs, verdicts), verdicts };
  }

  /** The inline copy of an engine-thread program, when it runs inline. */
  get(executable: Executable): InlineProgram | undefined {
    return this.programs.get(executable);
  }

  /**
   * One run on this thread, finished before it returns. A program whose runs drift well past the
   * threshold (a busier machine, say) leaves the inline path: later requests take the engine
   * thread again.
   */
  run(executable: Executable, program: InlineProgram, inputs: readonly HostTensor[]): HostTensor[] {
    const t0 = performance.now();
    const out = runSync(this.twin, program.local, inputs, this.weights);
    if ((performance.now() - t0) * 1000 > this.maxUs * DRIFT_FACTOR) program.slow++;
    if (++program.runs === WINDOW) {
      program.strikes = program.slow * 2 > WINDOW ? program.strikes + 1 : 0;
      program.runs = 0;
      program.slow = 0;
      if (program.strikes >= DRIFT_STRIKES) {
        const p = this.programs.get(executable);
        if (p && this.programs.delete(executable)) this.onDrift?.(p.label);
      }
    }
    return out;
  }

  /** Figures for the model's metadata: the threshold and each program's verdict. */
  figures(): Record<string, unknown> {
    const live = new Set([...this.programs.values()].map((p) => p.label));
    return {
      maxUs: this.maxUs,
      programs: this.verdicts.map((v) => ({
        program: v.label,
        inline: live.has(v.label),
        engineUs: v.engineUs === null ? null : round1(v.engineUs),
        localUs: v.localUs === null ? null : round1(v.localUs),
        ...(v.inline ? {} : { reason: v.reason }),
      })),
    };
  }

  dispose(): void {
    this.programs.clear();
    freeAll(this.weights, this.locals);
  }
}

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

/** Runs in windows until one window's median is within `maxUs` (returned) or the budget is spent (null). */
async function warmUp(
  twin: AbstractBackend,
  local: Executable,
  inputs: readonly HostTensor[],
  weights: readonly DeviceBuffer[],
  maxUs: number,
  stillWanted: () => boolean,
): Promise<number | null> {
  let spentMs = 0;
  let slice = performance.now();
  const window: number[] = [];
  let last: number | null = null;
  while (spentMs < LOCAL_BUDGET_MS && stillWanted()) {
    const t0 = performance.now();
    runSync(twin, local, inputs, weights);
    const ms = performance.now() - t0;
    spentMs += ms;
    window.push(ms * 1000);
    if (window.length === WINDOW) {
      last = median(window);
      if (last <= maxUs) return last;
      window.length = 0;
    }
    if (performance.now() - slice >= SLICE_MS) {
      await new Promise<void>((r) => setImmediate(r));
      slice = performance.now();
    }
  }
  return last;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[sorted.length >> 1] as number;
}

/** The median run on the engine thread after its warm-up (see ENGINE_ROUNDS). */
async function engineMedian(c: InlineCandidate, maxUs: number, stillWanted: () => boolean): Promise<number | null> {
  let last: number | null = null;
  for (let round = 0; round < ENGINE_ROUNDS && stillWanted(); round++) {
    const us = await c.engineTimes(ENGINE_RUNS, ENGINE_ROUND_MS);
    if (us.length === 0) return last;
    // The later half: the earlier runs of a round include the tail of the warm-up.
    last = median(us.slice(us.length >> 1));
    if (last <= maxUs || last > maxUs * FAR_FACTOR) return last;
  }
  return last;
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

function freeAll(weights: readonly DeviceBuffer[], programs: readonly Executable[]): void {
  for (const w of weights) w.dispose();
  for (const p of programs) p.dispose();
}

function round1(x: number): number {
  return Math.round(x * 10) / 10;
}
