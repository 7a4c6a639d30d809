import type { Executable } from "@xlaserve/core";
import type { ReplicaProgram, ReplicaSpec } from "../http-threads/protocol.ts";
import type { InlineHost, InlineVerdict } from "../inline/inline-runs.ts";
import type { InlineSubject } from "./inline-prep.ts";

/**
 * A model is replicated on the worker's other HTTP threads when each of its programs runs within
 * this multiple of the inline threshold (1.6 ms at the default 50 us), timed on the engine thread
 * and again by each thread on its copy. The bound is loose on purpose: both timings are taken
 * while the worker is busy, and on the 16-core GPU host, under 8 HTTP threads and a 4-thread load
 * generator, the MLP's b8 run timed 207-318 us on the threads against about 40 us idle
 * (bench/results/http-reactant-threads8-2026-11-30T01-23-53Z.json, where a bound of 4x refused
 * it everywhere). It only keeps a long program from holding an HTTP thread per request.
 */
export const REPLICA_MAX_FACTOR = 32;

/** The served model's identity as a replica repeats it. */
type ReplicaIdentity = Pick<ReplicaSpec, "name" | "version" | "generation" | "platform">;

/**
 * What another HTTP thread needs to run this model itself (http-threads/replica-model.ts): each
 * program serialized once, with the batch sizes it serves and the engine thread's answer for
 * zero inputs, and the weights. Null for a program that ran far over the threshold on the engine
 * thread (see REPLICA_MAX_FACTOR), or one without a verdict. Each thread times its copy itself
 * against the same bound (`maxRunUs`).
 */
export async function buildReplicaSpec(
  m: InlineSubject & ReplicaIdentity,
  backend: InlineHost,
  verdicts: readonly InlineVerdict[],
  maxUs: number,
): Promise<ReplicaSpec | null> {
  // Programs as the inline timing saw them: one per executable, labelled by its largest batch size.
  const byExecutable = new Map<Executable, number[]>();
  for (const { batchSize, program } of m.programs.targets()) {
    byExecutable.set(program.executable, [...(byExecutable.get(program.executable) ?? []), batchSize]);
  }
  const maxRunUs = maxUs * REPLICA_MAX_FACTOR;
  for (const sizes of byExecutable.values()) {
    const verdict = verdicts.find((v) => v.label === `b${Math.max(...sizes)}`);
    if (!verdict) return null;
    // Untimed (its cold probe run was long): the thread's own timing decides.
    if (verdict.engineUs !== null && verdict.engineUs > maxRunUs) return null;
  }
  const programs: ReplicaProgram[] = [];
  for (const [executable, sizes] of byExecutable) {
    const referenceInputs = m.programs.zeroInputs(null, Math.max(...sizes));
    const referenceOutputs = await m.withEngineWeights((weights) => backend.run(executable, referenceInputs, weights));
    programs.push({ batchSizes: sizes, bytes: await backend.serialize(executable), referenceInputs, referenceOutputs });
  }
  return {
    name: m.name,
    version: m.version,
    generation: m.generation,
    platform: m.platform,
    inputs: m.programs.inputs,
    outputs: m.programs.outputs,
    compiledBatchSizes: m.programs.compiledBatchSizes,
    maxRunUs,
    programs,
    weights: m.hostWeights,
  };
}
