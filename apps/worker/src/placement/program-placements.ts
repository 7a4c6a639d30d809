import type { Executable } from "@xlaserve/core";
import type { InlineRuns } from "../inline/inline-runs.ts";
import type { InlinePlacement, Placement } from "./placement.ts";

/**
 * Where each of a model's programs runs: the placement chosen at load, unless the program runs
 * inline now (after its timing; until its runs drift).
 */
export class ProgramPlacements {
  private inlineRuns: InlineRuns | null = null;

  constructor(private readonly base: Placement) {}

  of(executable: Executable): Placement | InlinePlacement {
    return this.inlineRuns?.placement(executable) ?? this.base;
  }

  /** Programs of `runs` run inline from now on. */
  useInline(runs: InlineRuns): void {
    this.inlineRuns = runs;
  }

  /** The placement chosen at load (what every program falls back to). */
  get atLoad(): Placement {
    return this.base;
  }

  get inline(): InlineRuns | null {
    return this.inlineRuns;
  }

  dispose(): void {
    this.inlineRuns?.dispose();
    this.inlineRuns = null;
  }
}
