import type { Logger } from "@xlaserve/core";
import { asXlaserveError } from "@xlaserve/core";
import type { RuntimeModel } from "../model/runtime-model.ts";

/**
 * Whether coalescing changes the model's answers, measured beside the requests once it serves
 * and logged ("batch invariance"), so operators turn coalescing on knowing what it costs. Never
 * rejects: a failure is a warning (none once the model was retired).
 */
export function reportBatchInvariance(model: RuntimeModel, log: Logger, coalescing: boolean): Promise<void> {
  return model
    .checkBatchInvariance()
    .then((report) => {
      if (!report) return;
      log.info("batch invariance", {
        model: model.name,
        invariant: report.invariant,
        // The largest difference is what a person weighs coalescing by; each check in detail.
        maxAbsDiff: Math.max(0, ...report.checks.map((c) => c.maxAbsDiff)),
        coalescing,
        detail: { rows: report.rows, checks: report.checks, ms: report.ms },
      });
    })
    .catch((err) => {
      if (!model.isRetired()) {
        log.warn("batch invariance not measured", { model: model.name, error: asXlaserveError(err).message });
      }
    });
}
