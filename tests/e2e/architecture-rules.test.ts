import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";

/**
 * The README's table of ARCHITECTURE.md's rules names, for each rule, the file that owns it and
 * the test that holds it. This keeps the table true: each owner file exists and names the rule it
 * owns, each test file exists and holds a test of that name.
 */
const ROOT = resolve(import.meta.dir, "..", "..");
const readme = readFileSync(join(ROOT, "README.md"), "utf8");
const rows = [...readme.matchAll(/^\| (\d)\. [^|]+\| `([^`]+)` \| `([^`]+)`: "([^"]+)" \|$/gm)].map((m) => ({
  rule: Number(m[1]),
  owner: m[2] as string,
  testFile: m[3] as string,
  testName: m[4] as string,
}));

describe("ARCHITECTURE rules: one owner file and one named test each", () => {
  test("the README's table lists rules 1 to 6 once each", () => {
    expect(rows.map((r) => r.rule)).toEqual([1, 2, 3, 4, 5, 6]);
  });
  for (const r of rows) {
    test(`rule ${r.rule}: ${r.owner} and "${r.testName}"`, () => {
      expect(existsSync(join(ROOT, r.owner))).toBe(true);
      expect(readFileSync(join(ROOT, r.owner), "utf8")).toContain(`rule ${r.rule}`);
      expect(existsSync(join(ROOT, r.testFile))).toBe(true);
      const tests = readFileSync(join(ROOT, r.testFile), "utf8");
      expect(tests).toContain(r.testName);
    });
  }
});
