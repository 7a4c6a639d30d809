/**
 * The worker started from a terminal writes log lines for a person: the human format (format
 * auto sees a terminal), and lines no longer than what they say. A real pseudo-terminal through
 * util-linux's `script`; skips, saying why, where it is missing.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { resolve } from "node:path";
import { type TempRepo, makeRepo } from "./helpers.ts";

const SCRIPT = Bun.which("script");
if (!SCRIPT) console.warn("terminal log test skipped: util-linux's script is missing (apt-get install bsdutils)");
const MAIN = resolve(import.meta.dir, "../../apps/worker/src/main.ts");
const LOG_LINE = /^\d\d:\d\d:\d\d\.\d{3} (DEBUG|INFO |WARN |ERROR) \S/;

const repos: TempRepo[] = [];
afterAll(() => {
  for (const r of repos) r.cleanup();
});

describe.skipIf(!SCRIPT)("log lines on a terminal", () => {
  test("human lines, each short: per-program timings and raw figures stay in the JSON", async () => {
    const repo = makeRepo(["mlp", "cnn"]);
    repos.push(repo);
    const env = { ...process.env };
    for (const k of Object.keys(env)) if (k.startsWith("XLASERVE_")) delete env[k];
    const worker = [process.execPath, MAIN, "serve", "--port", "0", "--engine", "reactant"];
    const args = [...worker, "--repository", repo.repository, "--state-dir", repo.stateDir];
    // `timeout` ends the worker whatever happens to the test.
    const command = `timeout -s TERM 60 ${args.map((a) => `'${a}'`).join(" ")}`;
    const p = Bun.spawn([SCRIPT as string, "-qefc", command, "/dev/null"], { stdout: "pipe", stderr: "pipe", env });
    let out = "";
    const decoder = new TextDecoder();
    for await (const chunk of p.stdout as ReadableStream<Uint8Array>) {
      out += decoder.decode(chunk, { stream: true });
      if (/ready in \d+ ms/.test(out)) break;
    }
    p.kill("SIGTERM");
    await p.exited;

    const lines = out.split(/\r?\n/).filter((l) => LOG_LINE.test(l));
    expect(out).not.toMatch(/^\{"time"/m); // no JSON record on a terminal
    const loaded = lines.filter((l) => l.includes(" model loaded "));
    expect(loaded.length).toBe(2);
    for (const l of loaded) {
      expect(l).toMatch(
        /model=(mlp|cnn) ms=[\d.]+ cache="\d+\/\d+ hit" memory="weights .+, scratch .+" residency=device$/,
      );
      expect(l).not.toContain("programs=");
    }
    const budget = lines.find((l) => l.includes(" weight budget resolved "));
    expect(budget).toContain('summary="pool ');
    expect(budget).not.toContain("models=");
    for (const l of lines) expect(l.length).toBeLessThanOrEqual(240);
  }, 90_000);
});
