import { expect, test } from "bun:test";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const root = join(import.meta.dir, "..", "..", "..");
const committed = join(import.meta.dir, "..", "src", "grpc", "gen");

test("the committed generated code is what the .proto files generate now", () => {
  const out = mkdtempSync(join(tmpdir(), "xlaserve-protos-"));
  try {
    execFileSync("node", [join(root, "scripts", "gen-protos.mjs"), "--out", out], { stdio: "pipe" });
    const files = readdirSync(committed).sort();
    expect(readdirSync(out).sort()).toEqual(files);
    for (const file of files) {
      expect([file, readFileSync(join(out, file), "utf8")]).toEqual([
        file,
        readFileSync(join(committed, file), "utf8"),
      ]);
    }
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});
