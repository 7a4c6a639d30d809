import { existsSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { copyBundle } from "../../../e2e/helpers.ts";
import { type SuiteContext, freshRepo, scratchDir, started } from "../context.ts";
import { type FaultRow, row } from "../fault-row.ts";
import { checkAnswers } from "../tallies.ts";
import { spawnWorker } from "../worker-process.ts";

/** A model folder that is a symbolic link out of the repository. */
export async function linkOutside(ctx: SuiteContext): Promise<FaultRow> {
  const repo = freshRepo(ctx);
  const outside = join(scratchDir(ctx, "outside"), "evil");
  copyBundle("mlp", outside);
  writeFileSync(
    join(outside, "manifest.yaml"),
    readFileSync(join(outside, "manifest.yaml"), "utf8").replace(/^name: .*$/m, "name: evil"),
  );
  symlinkSync(outside, join(repo.repository, "evil"));
  const w = await started(spawnWorker(repo));
  const index = (await (await fetch(`${w.url}/v2/repository/index`, { method: "POST" })).json()) as Array<{
    name: string;
    state: string;
    reason: string;
  }>;
  const tally = await checkAnswers(ctx, w, 0);
  const survived = w.alive();
  await w.stop();
  const evil = index.find((e) => e.name === "evil");
  const refused = evil?.state === "UNAVAILABLE" && evil.reason.includes("outside the model repository");
  const wrote = existsSync(join(outside, ".cache"));
  return row(
    "model folder linked outside the repository",
    1,
    survived && refused && !wrote && tally.last === 0,
    tally,
    null,
    `${refused ? "refused" : "served"}; ${wrote ? ".cache written outside" : "nothing written outside"}`,
  );
}
