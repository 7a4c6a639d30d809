/**
 * The README's quick start as a newcomer runs it, in a fresh clone of this checkout: `npm start`,
 * then the README's curl lines, then the CLI through npx. The clone reuses this checkout's
 * installed packages (links to them, with its own workspace links) so that nothing is
 * downloaded; on a port picked free, since a test may not take 8000.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { execFileSync } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  utimesSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "../..");
const work = mkdtempSync(join(tmpdir(), "xlaserve-newcomer-"));
const clone = join(work, "xlaserve");
let npm: Bun.Subprocess<"ignore", "pipe", "pipe"> | null = null;

afterAll(async () => {
  try {
    if (npm) process.kill(-npm.pid, "SIGKILL");
  } catch {
    // already gone
  }
  await stopClusterOfClone();
  rmSync(work, { recursive: true, force: true });
});

/** The set-up starts a PostgreSQL cluster per checkout (scripts/postgres.mjs); the clone's goes with it. */
async function stopClusterOfClone(): Promise<void> {
  const script = join(clone, "scripts", "postgres.mjs");
  if (!existsSync(script)) return;
  const { defaultClusterDir } = (await import(script)) as { defaultClusterDir: () => string };
  const ours = (await import(join(ROOT, "scripts", "postgres.mjs"))) as { defaultClusterDir: () => string };
  const dir = defaultClusterDir();
  // A cluster shared with this checkout (one per user) is not the clone's to stop.
  if (dir === ours.defaultClusterDir() || !dir.startsWith(tmpdir()) || !existsSync(join(dir, "data"))) return;
  const base = "/usr/lib/postgresql";
  const version = existsSync(base) ? readdirSync(base).sort().at(-1) : undefined;
  if (version) {
    const pgCtl = join(base, version, "bin", "pg_ctl");
    const args = ["stop", "-D", join(dir, "data"), "-m", "immediate"];
    try {
      if (process.getuid?.() === 0)
        execFileSync("runuser", ["-u", "postgres", "--", pgCtl, ...args], { stdio: "ignore" });
      else execFileSync(pgCtl, args, { stdio: "ignore" });
    } catch {
      // not running
    }
  }
  rmSync(dir, { recursive: true, force: true });
}

/** node_modules for the clone: this checkout's packages, but workspace links into the clone. */
function linkPackages(): void {
  const from = join(ROOT, "node_modules");
  const to = join(clone, "node_modules");
  mkdirSync(to);
  for (const entry of readdirSync(from)) {
    if (entry === "@xlaserve" || entry === ".bin" || entry === ".package-lock.json") continue;
    symlinkSync(join(from, entry), join(to, entry));
  }
  // Workspace links are relative (../../packages/core): copied as they are, they point into the clone.
  cpSync(join(from, "@xlaserve"), join(to, "@xlaserve"), { recursive: true, verbatimSymlinks: true });
  cpSync(join(from, ".bin"), join(to, ".bin"), { recursive: true, verbatimSymlinks: true });
  // The set-up's "already installed" check: a marker newer than the clone's fresh package-lock.
  cpSync(join(from, ".package-lock.json"), join(to, ".package-lock.json"));
  const later = new Date(Date.now() + 60_000);
  utimesSync(join(to, ".package-lock.json"), later, later);
}

/** The README's quick-start curl lines (a line ending in \ continues on the next). */
function readmeCurls(): string[] {
  const readme = readFileSync(join(clone, "README.md"), "utf8");
  const quick = readme.slice(
    readme.indexOf("## Quick start"),
    readme.indexOf("\n## ", readme.indexOf("## Quick start") + 5),
  );
  const lines = quick.split("\n");
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    let line = lines[i] as string;
    if (!line.startsWith("curl ")) continue;
    while (line.endsWith("\\") && i + 1 < lines.length) line = `${line.slice(0, -1)} ${(lines[++i] as string).trim()}`;
    out.push(line);
  }
  return out;
}

describe("the README's newcomer path, in a fresh clone", () => {
  test("npm start, the curl lines, npx xlaserve; SIGTERM stops it", async () => {
    execFileSync("git", ["clone", "--quiet", "--no-hardlinks", ROOT, clone], { stdio: "ignore" });
    linkPackages();
    const env: Record<string, string | undefined> = { ...process.env, XLASERVE_PORT: "0", XLASERVE_GRPC_PORT: "0" };
    npm = Bun.spawn(["setsid", "npm", "start"], { cwd: clone, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    let text = "";
    const decoder = new TextDecoder();
    void (async () => {
      for await (const chunk of (npm as Bun.Subprocess<"ignore", "pipe", "pipe">).stderr) text += decoder.decode(chunk);
    })();
    const reader = npm.stdout.getReader();
    const deadline = Date.now() + 150_000;
    while (!/listening on http:\/\/\S+/.test(text) && Date.now() < deadline) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value);
    }
    const url = /listening on (http:\/\/\S+)/.exec(text)?.[1];
    if (!url) throw new Error(`npm start did not come up:\n${text}`);
    const hostPort = url.replace("http://", "");

    const curls = readmeCurls();
    expect(curls.length).toBeGreaterThanOrEqual(2);
    for (const line of curls) {
      const run = Bun.spawnSync(["sh", "-c", line.replaceAll("localhost:8000", hostPort)], { stdout: "pipe" });
      expect(run.exitCode).toBe(0);
      const answer = JSON.parse(run.stdout.toString()) as Record<string, unknown>;
      expect(answer.error).toBeUndefined();
      if (line.includes("/infer")) expect(Array.isArray(answer.outputs)).toBe(true);
      else expect(answer.name).toBe("mlp");
    }

    const npx = (args: string[]) =>
      Bun.spawnSync(["npx", "--no-install", "xlaserve", ...args], { cwd: clone, stdout: "pipe", stderr: "pipe", env });
    const version = npx(["--version"]);
    expect(version.stderr.toString()).toBe("");
    expect(version.stdout.toString()).toMatch(/^xlaserve \d+\.\d+\.\d+\n$/);
    expect(npx(["--help"]).stdout.toString()).toContain("xlaserve serve [options]");
    expect(npx(["compile", "--help"]).stdout.toString()).toContain("Usage: xlaserve compile <repository>");

    process.kill(npm.pid, "SIGTERM");
    const code = await Promise.race([npm.exited, Bun.sleep(20_000).then(() => "timeout")]);
    expect(code).toBe(0);
    expect(text).toContain('"msg":"stopped"');
  }, 240_000);
});
