/**
 * `npm start` as systemd, Docker and Kubernetes run it: SIGTERM to npm (PID 1 of a container) or
 * to the whole process group (systemd's default, Ctrl-C in a terminal) ends in the worker's
 * graceful shutdown ("stopped", exit 0), not an orphaned worker still serving. And `npm start`
 * leaves the checkout as it was: every file a package.json names as a `bin` is committed
 * executable, so npm's linking changes no tracked file's mode.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { type TempRepo, makeRepo } from "./helpers.ts";

const ROOT = resolve(import.meta.dir, "../..");
const repos: TempRepo[] = [];
afterAll(() => {
  for (const r of repos) r.cleanup();
});

/** `npm start` in a process group of its own (setsid), serving a temp repository on a free port. */
async function npmStart(): Promise<{ proc: Bun.Subprocess<"ignore", "pipe", "pipe">; url: string; out: () => string }> {
  const repo = makeRepo(["mlp"]);
  repos.push(repo);
  const env: Record<string, string | undefined> = {
    ...process.env,
    XLASERVE_PORT: "0",
    XLASERVE_MODEL_REPOSITORY: repo.repository,
    XLASERVE_CACHE__STATE_DIR: repo.stateDir,
    XLASERVE_ENGINE: "reactant",
    XLASERVE_REPOSITORY__DYNAMIC: "false",
  };
  const proc = Bun.spawn(["setsid", "npm", "start", "--silent"], {
    cwd: ROOT,
    env,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  let text = "";
  const decoder = new TextDecoder();
  void (async () => {
    for await (const chunk of proc.stderr) text += decoder.decode(chunk);
  })();
  const reader = proc.stdout.getReader();
  const deadline = Date.now() + 120_000;
  while (!/listening on http:\/\/\S+/.test(text) && Date.now() < deadline) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value);
  }
  void (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      text += decoder.decode(value);
    }
  })();
  const url = /listening on (http:\/\/\S+)/.exec(text)?.[1];
  if (!url) throw new Error(`npm start did not come up:\n${text}`);
  return { proc, url, out: () => text };
}

async function gone(url: string): Promise<boolean> {
  for (let i = 0; i < 100; i++) {
    try {
      await fetch(`${url}/v2/health/live`);
    } catch {
      return true;
    }
    await Bun.sleep(100);
  }
  return false;
}

describe("npm start", () => {
  for (const target of ["npm", "the process group"] as const) {
    test(`SIGTERM to ${target}: graceful shutdown, exit 0, nothing left serving`, async () => {
      const { proc, url, out } = await npmStart();
      try {
        expect((await fetch(`${url}/v2/health/ready`)).status).toBe(200);
        if (target === "npm") process.kill(proc.pid, "SIGTERM");
        else process.kill(-proc.pid, "SIGTERM");
        const code = await Promise.race([proc.exited, Bun.sleep(20_000).then(() => "timeout")]);
        expect(await gone(url)).toBe(true);
        expect(code).toBe(0);
        expect(out()).toContain('"msg":"stopped"');
      } finally {
        // Whatever a failure left behind (an orphaned worker keeps the group id).
        try {
          process.kill(-proc.pid, "SIGKILL");
        } catch {
          // the group is gone: nothing left
        }
      }
    }, 150_000);
  }

  test("every bin a package.json names is committed executable", () => {
    const manifests = ["package.json", "apps/worker/package.json"];
    const bins = manifests.flatMap((m) => {
      const bin = (JSON.parse(readFileSync(join(ROOT, m), "utf8")) as { bin?: Record<string, string> }).bin ?? {};
      return Object.values(bin).map((p) => join(m, "..", p));
    });
    expect(bins.length).toBeGreaterThan(0);
    const listed = Bun.spawnSync(["git", "ls-files", "-s", ...bins], { cwd: ROOT }).stdout.toString();
    expect(listed.split("\n").filter((l) => l.startsWith("100644"))).toEqual([]);
  });
});
