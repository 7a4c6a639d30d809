import type { AbstractBackend, DeviceBuffer, Executable, HostTensor } from "@xlaserve/core";
import type { InlinePlacement } from "../placement/placement.ts";
import { runSync, sameBytes } from "./run-sync.ts";
import { WINDOW, engineMedian, warmUpHere } from "./timing.ts";

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

/**
 * A backend that can run programs inline: it offers a second instance of its engine on this
 * thread (localTwin), runs a whole request in one call on its own (run), and times runs there
 * (timeRuns). The threaded CPU engine does; PJRT does not.
 */
export type InlineHost = AbstractBackend & Required<Pick<AbstractBackend, "localTwin" | "timeRuns" | "run">>;

export function isInlineHost(backend: AbstractBackend): backend is InlineHost {
  return backend.localTwin !== undefined && backend.timeRuns !== undefined && backend.run !== undefined;
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
  /** Each inline program as a placement (what the request path runs it through). */
  private readonly placements = new Map<Executable, InlinePlacement>();

  private constructor(
    private readonly twin: AbstractBackend,
    private readonly weights: readonly DeviceBuffer[],
    private readonly programs: Map<Executable, InlineProgram & { readonly label: string }>,
    readonly maxUs: number,
    private readonly verdicts: readonly InlineVerdict[],
  ) {
    this.locals = [...programs.values()].map((p) => p.local);
    for (const [executable, program] of programs) {
      this.placements.set(executable, { where: "inline", runNow: (inputs) => this.run(executable, program, inputs) });
    }
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
        const localUs = await warmUpHere(twin, local, c.inputs, weights, maxUs, stillWanted);
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

  /** The program's placement on this thread, while it runs inline. */
  placement(executable: Executable): InlinePlacement | undefined {
    return this.programs.has(executable) ? this.placements.get(executable) : undefined;
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

function freeAll(weights: readonly DeviceBuffer[], programs: readonly Executable[]): void {
  for (const w of weights) w.dispose();
  for (const p of programs) p.dispose();
}

function round1(x: number): number {
  return Math.round(x * 10) / 10;
}
