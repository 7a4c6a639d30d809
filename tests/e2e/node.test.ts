import { expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { waitFor } from "./helpers.ts";

const MAIN = resolve(import.meta.dir, "../../apps/worker/src/main.ts");
const EXAMPLES = resolve(import.meta.dir, "../../examples/models");

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Starts `xlaserve node` with N CPU workers on a free port and collects its output lines. */
function spawnNode(state: string, workers: number) {
  const lines: string[] = [];
  const node = Bun.spawn(
    [
      process.execPath,
      MAIN,
      "node",
      "--cpu",
      "--workers",
      String(workers),
      "--port",
      "0",
      "--backoff-ms",
      "100",
      "--grace-seconds",
      "20",
      "--repository",
      EXAMPLES,
      "--state-dir",
      state,
      "--no-watch",
      "--log-format",
      "text",
    ],
    { stdout: "pipe", stderr: "pipe", env: { ...process.env, XLASERVE_BLAS_THREADS: "1" } },
  );
  const pump = async (s: ReadableStream<Uint8Array>) => {
    let rest = "";
    for await (const chunk of s) {
      const parts = (rest + new TextDecoder().decode(chunk)).split("\n");
      rest = parts.pop() ?? "";
      lines.push(...parts);
    }
  };
  const pumps = [pump(node.stdout), pump(node.stderr)];
  const started = (name: string) =>
    lines.flatMap((l) => {
      const m = new RegExp(`^\\[node\\] started ${name} \\(pid ([0-9]+)`).exec(l);
      return m ? [Number(m[1])] : [];
    });
  const ready = (name: string) => lines.filter((l) => l.startsWith(`[${name}] `) && l.includes("ready in")).length;
  return { node, lines, pumps, started, ready };
}

/**
 * `xlaserve node` with real CPU workers on one shared port: every child starts and serves, a
 * child killed with SIGKILL is restarted after its backoff, and SIGTERM drains them all (each
 * exits 0) before the node exits 0.
 */
test("xlaserve node: N workers on one port, a killed one restarted, SIGTERM drains all", async () => {
  const state = mkdtempSync(join(tmpdir(), "xlaserve-node-"));
  const { node, lines, pumps, started, ready } = spawnNode(state, 2);
  try {
    const portText = await waitFor(() => lines.map((l) => /CPU workers on port ([0-9]+)/.exec(l)?.[1]).find(Boolean));
    const port = Number(portText);
    await waitFor(() => ready("cpu0") >= 1 && ready("cpu1") >= 1, 60_000);
    const [pid0] = started("cpu0");
    const [pid1] = started("cpu1");
    expect(pid0).not.toBe(pid1);
    for (let i = 0; i < 8; i++) expect((await fetch(`http://127.0.0.1:${port}/v2/health/ready`)).status).toBe(200);

    process.kill(pid0!, "SIGKILL");
    await waitFor(() => started("cpu0").length >= 2 && ready("cpu0") >= 2, 60_000);
    expect(lines.some((l) => /^\[node\] cpu0 exited \(signal SIGKILL/.test(l))).toBe(true);
    expect(lines).toContain("[node] restarting cpu0 in 100 ms");
    const pid0b = started("cpu0")[1]!;
    expect(alive(pid0!)).toBe(false);
    expect(alive(pid1!)).toBe(true); // the other worker was left alone
    expect((await fetch(`http://127.0.0.1:${port}/v2/health/ready`)).status).toBe(200);

    node.kill("SIGTERM");
    expect(await node.exited).toBe(0);
    await Promise.all(pumps);
    for (const name of ["cpu0", "cpu1"]) {
      expect(lines.some((l) => new RegExp(`^\\[node\\] ${name} exited \\(code 0,`).test(l))).toBe(true);
    }
    expect(lines.at(-1)).toBe("[node] node stopped (exit 0)");
    for (const pid of [pid0b, pid1!]) expect(alive(pid)).toBe(false);
  } finally {
    if (node.exitCode === null) node.kill("SIGKILL");
    rmSync(state, { recursive: true, force: true });
  }
}, 150_000);

test("a node killed with SIGKILL takes its workers with it (the kernel's parent-death signal)", async () => {
  const state = mkdtempSync(join(tmpdir(), "xlaserve-node-"));
  const { node, started, ready } = spawnNode(state, 1);
  try {
    await waitFor(() => ready("cpu0") >= 1, 60_000);
    const [pid] = started("cpu0");
    node.kill("SIGKILL");
    await node.exited;
    await waitFor(() => !alive(pid!), 20_000);
  } finally {
    if (node.exitCode === null) node.kill("SIGKILL");
    rmSync(state, { recursive: true, force: true });
  }
}, 90_000);
