import type { Logger } from "@xlaserve/core";
import { asXlaserveError } from "@xlaserve/core";
import type { RuntimeModel } from "../model/runtime-model.ts";

/**
 * Runs moved off the engine thread: a busy model's short programs timed in the background and
 * run inline on the HTTP thread from then on (the model serves through the engine meanwhile).
 */
export class InlinePreparation {
  /** Preparations in progress (shutdown waits for them to stop). */
  private readonly preparing = new Set<Promise<void>>();

  constructor(
    private readonly maxUs: number,
    private readonly log: Logger,
  ) {}

  /** Asked for by the model itself once it is busy (see RuntimeModel.onInlineDue). */
  prepare(model: RuntimeModel): void {
    const maxUs = this.maxUs;
    if (maxUs <= 0) return;
    const job = model
      .prepareInline(maxUs)
      .then((verdicts) => {
        if (!verdicts) return;
        this.log.info("inline runs", {
          model: model.name,
          maxUs,
          programs: verdicts.map((v) => ({
            program: v.label,
            inline: v.inline,
            engineUs: v.engineUs === null ? null : round1(v.engineUs),
            localUs: v.localUs === null ? null : round1(v.localUs),
            ...(v.inline ? {} : { why: v.reason }),
          })),
        });
      })
      .catch((err) => {
        if (!model.isRetired()) {
          this.log.warn("inline runs not prepared; every run stays on the engine", {
            model: model.name,
            error: asXlaserveError(err).message,
          });
        }
      })
      .finally(() => this.preparing.delete(job));
    this.preparing.add(job);
  }

  /** Resolves once every preparation in progress has stopped (each does once its model is retired). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.preparing]);
  }
}

function round1(ms: number): number {
  return Math.round(ms * 10) / 10;
}
