import type { Logger } from "@xlaserve/core";
import { asXlaserveError } from "@xlaserve/core";
import type { ReplicaSpec } from "../http-threads/protocol.ts";
import type { RuntimeModel } from "../model/runtime-model.ts";

/** Where models that run inline are replicated (the worker's other HTTP threads). */
export interface ReplicaHost {
  publish(spec: ReplicaSpec): void;
  drop(name: string, generation: number): void;
  /** Resolves once every thread has handled every message sent to it so far. */
  sync(): Promise<void>;
}

/**
 * Runs moved off the engine thread: a busy model's short programs timed and run inline on this
 * thread, and such a model handed to the worker's other HTTP threads (http-threads/front-pool.ts)
 * once timed (RuntimeModel.replicaSpec decides whether it qualifies), taken back when retired.
 */
export class InlineReplicas {
  private host: ReplicaHost | null = null;
  /** Inline preparations in progress (shutdown waits for them to stop). */
  private readonly preparing = new Set<Promise<void>>();

  constructor(
    private readonly maxUs: number,
    private readonly log: Logger,
  ) {}

  attach(host: ReplicaHost | null, models: readonly RuntimeModel[]): void {
    this.host = host;
    if (host) for (const model of models) void this.publish(model);
  }

  drop(name: string, generation: number): void {
    this.host?.drop(name, generation);
  }

  async sync(): Promise<void> {
    await this.host?.sync();
  }

  async publish(model: RuntimeModel): Promise<void> {
    if (!this.host) return;
    try {
      const spec = await model.replicaSpec(this.maxUs);
      // Checked again after the awaits: a version retired meanwhile must not be handed out.
      if (spec && !model.isRetired() && this.host) this.host.publish(spec);
    } catch (err) {
      this.log.warn("model not handed to the other HTTP threads; they relay its requests", {
        model: model.name,
        error: asXlaserveError(err).message,
      });
    }
  }

  /**
   * Times the model's programs on the HTTP thread in the background (the model serves through the
   * engine meanwhile) and lets those within the threshold run inline from then on. Asked for by
   * the model itself once it is busy (see RuntimeModel.onInlineDue).
   */
  prepare(model: RuntimeModel): void {
    const maxUs = this.maxUs;
    if (maxUs <= 0) return;
    const job = model
      .prepareInline(maxUs)
      .then((verdicts) => {
        if (!verdicts) return;
        void this.publish(model);
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
