import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EXAMPLES, copyBundle } from "../../e2e/helpers.ts";
import { expectedLogits, mlpInput } from "./answers.ts";
import { type BundleVersion, installVersion, mlpVersions } from "./versions.ts";
import type { WorkerProcess } from "./worker-process.ts";

/** A seeded generator, so a failing run can be repeated (FAULTS_SEED). */
export function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
}

/** What every fault class gets: the scale, a seeded generator, the MLP's versions and their answers. */
export interface SuiteContext {
  readonly scale: number;
  readonly random: () => number;
  readonly root: string;
  readonly versions: BundleVersion[];
  readonly expected: Float32Array[];
  readonly body: string;
  cleanup(): void;
}

/** Builds the context: each version of the MLP and the logits XLA gives for the test input. */
export async function suiteContext(scale: number, seed: number): Promise<SuiteContext> {
  const root = mkdtempSync(join(tmpdir(), "xlaserve-faults-"));
  const versions = mlpVersions(root);
  const { tensor, body } = mlpInput(EXAMPLES);
  const expected: Float32Array[] = [];
  for (const [i, v] of versions.entries()) {
    const dir = join(root, `expected-${i}`, "mlp");
    copyBundle("mlp", dir);
    installVersion(dir, v);
    expected.push(await expectedLogits(dir, tensor));
  }
  return {
    scale,
    random: rng(seed),
    root,
    versions,
    expected,
    body,
    cleanup: () => rmSync(root, { recursive: true, force: true }),
  };
}

let dirCount = 0;

/** A new folder name under the suite's root, for a class that needs one of its own. */
export function scratchDir(ctx: SuiteContext, prefix: string): string {
  return join(ctx.root, `${prefix}-${dirCount++}`);
}

export interface FaultRepo {
  readonly repository: string;
  readonly stateDir: string;
  /** The MLP bundle's folder in it. */
  readonly mlp: string;
}

/** A repository holding a copy of the MLP example, with a state directory of its own. */
export function freshRepo(ctx: SuiteContext): FaultRepo {
  const base = scratchDir(ctx, "repo");
  const repository = join(base, "models");
  copyBundle("mlp", join(repository, "mlp"));
  return { repository, stateDir: join(base, "state"), mlp: join(repository, "mlp") };
}

export const sleep = (ms: number) => Bun.sleep(ms);

/** The worker, once it is ready. */
export async function started(w: WorkerProcess): Promise<WorkerProcess> {
  await w.ready;
  return w;
}
