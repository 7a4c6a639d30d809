/**
 * The status page at / in a real browser (Debian's chromium driven by playwright-core): what it
 * shows is checked against /v2, the repository index and /metrics; it updates itself; it loads
 * nothing from anywhere but the worker. XLASERVE_TEST_SCREENSHOT=1 writes docs/status-page.png.
 * Skips, saying why, where chromium is not installed (scripts/setup.mjs installs it with apt-get).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import type { StartedWorker } from "../../apps/worker/src/index.ts";
import { parseExposition } from "../../packages/server/test/support/exposition.ts";
import { startCpuWorker } from "./cpu-worker.ts";
import { type TempRepo, collectLogs, copyBundle, inferJson, makeRepo, readReference } from "./helpers.ts";
import { writeFileSync } from "node:fs";

const CHROMIUM = "/usr/bin/chromium";
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium) console.warn(`status page test skipped: ${CHROMIUM} is missing (apt-get install chromium)`);

let repo: TempRepo;
let worker: StartedWorker;
let browser: BrowserContext;
let page: Page;
const profile = mkdtempSync(join(tmpdir(), "xlaserve-chromium-"));
const requested: string[] = [];

beforeAll(async () => {
  if (!hasChromium) return;
  repo = makeRepo(["mlp", "cnn"]);
  copyBundle("mlp", join(repo.repository, "broken"));
  writeFileSync(join(repo.repository, "broken", "manifest.yaml"), "format_version: '2.0'\nname: broken\n");
  worker = await startCpuWorker(
    repo,
    collectLogs().logger,
    { repository: { dynamic: false }, server: { authToken: "tok", readiness: "lenient" } },
    { inlineMaxUs: 0 },
  );
  const { chromium } = await import("playwright-core");
  // A fresh profile (playwright passes it as --user-data-dir).
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1200, height: 900 },
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  page = await browser.newPage();
  page.on("request", (r) => requested.push(r.url()));
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await worker?.stop();
  repo?.cleanup();
  rmSync(profile, { recursive: true, force: true });
});

let mlpRequests = 0;
const BAD_INPUT = "<i>features</i>";
let lastError = "";
async function traffic(withError = true): Promise<void> {
  const mlp = readReference("mlp").get(1)?.inputs ?? new Map();
  const cnn = readReference("cnn").get(1)?.inputs ?? new Map();
  for (let i = 0; i < 12; i++) expect((await inferJson(worker.url, "mlp", mlp)).status).toBe(200);
  for (let i = 0; i < 4; i++) expect((await inferJson(worker.url, "cnn", cnn)).status).toBe(200);
  mlpRequests += 12;
  if (!withError) return;
  // An input name with markup: the page must show it as text (escaped), not as markup.
  const bad = await fetch(`${worker.url}/v2/models/mlp/infer`, {
    method: "POST",
    body: JSON.stringify({
      inputs: [{ name: BAD_INPUT, shape: [1, 64], datatype: "FP32", data: new Array(64).fill(0) }],
    }),
  });
  expect(bad.status).toBe(400);
  lastError = `400 ${((await bad.json()) as { error: string }).error}`;
  mlpRequests += 1;
}

describe.skipIf(!hasChromium)("status page in chromium", () => {
  test("shows what /v2, the repository index and /metrics say, and updates itself", async () => {
    await page.goto(`${worker.url}/`);
    await traffic();
    // A reload, for the events list.
    const reload = await fetch(`${worker.url}/v2/repository/models/mlp/load`, {
      method: "POST",
      headers: { authorization: "Bearer tok" },
    });
    expect(reload.status).toBe(200);
    await traffic();
    // For the committed picture, a minute of history rather than a few seconds.
    if (process.env.XLASERVE_TEST_SCREENSHOT === "1") {
      const until = Date.now() + 40_000;
      while (Date.now() < until) {
        await traffic(false);
        await Bun.sleep(1500);
      }
    }
    // Self-updating: the page fetches new snapshots and re-renders them (no reload of the page).
    // (Page-side code as strings: this project's TypeScript has no DOM types.)
    await page.waitForFunction("Number(document.body.dataset.refreshed ?? 0) >= 2", undefined, { timeout: 30_000 });
    await page.waitForFunction(
      `document.querySelector('tr[data-model="mlp"] .requests')?.textContent === "${mlpRequests}"`,
      undefined,
      { timeout: 30_000 },
    );

    const server = (await (await fetch(`${worker.url}/v2`)).json()) as { xlaserve: Record<string, string> };
    const index = (await (await fetch(`${worker.url}/v2/repository/index`, { method: "POST" })).json()) as Array<{
      name: string;
      version: string;
      state: string;
      reason: string;
    }>;
    const metrics = parseExposition(await (await fetch(`${worker.url}/metrics`)).text());

    expect(await page.locator("#engine").textContent()).toContain(server.xlaserve.engine as string);
    expect(await page.locator("#engine").textContent()).toContain(server.xlaserve.engineReason as string);

    const rows = (await page.evaluate(
      `[...document.querySelectorAll("#models tbody tr")].map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent ?? ""))`,
    )) as string[][];
    expect(rows.map((r) => r[0])).toEqual(index.map((e) => e.name));
    for (const [i, e] of index.entries()) {
      const row = rows[i] as string[];
      expect(row[1]).toBe(e.version);
      expect(row[2]).toBe(e.state);
      expect(row[3]).toBe(e.reason);
      if (e.state !== "READY") continue;
      const ok = metrics.value("nv_inference_request_success", { model: e.name }) ?? 0;
      const failed = metrics.value("nv_inference_request_failure", { model: e.name }) ?? 0;
      expect(Number(row[7])).toBe(ok + failed);
      expect(Number(row[8])).toBe(failed);
    }
    expect(rows.find((r) => r[0] === "broken")?.[3]).toContain("executable_inputs");

    const hits = metrics.samples.filter((s) => s.name === "xlaserve_cache_hits_total").reduce((a, s) => a + s.value, 0);
    const misses = metrics.samples
      .filter((s) => s.name === "xlaserve_cache_misses_total")
      .reduce((a, s) => a + s.value, 0);
    expect(hits).toBeGreaterThan(0); // the reload found mlp's programs in the cache
    expect(await page.locator("#cache-hit-rate").textContent()).toContain(
      `${Math.round((hits / (hits + misses)) * 100)}% (${hits} hits, ${misses} misses)`,
    );

    // The memory bar: pool, scratch and what is kept free, in proportion to the limit.
    const limit = metrics.value("worker_weight_budget_bytes", { figure: "limit" }) ?? 0;
    const scratch = metrics.value("worker_weight_cache_max_scratch_bytes") ?? 0;
    expect(limit).toBeGreaterThan(0);
    const scratchWidth = (await page.evaluate('document.querySelector("#memory-bar .scratch").style.width')) as string;
    expect(Number.parseFloat(scratchWidth)).toBeCloseTo((scratch / limit) * 100, 1);

    // Latency charts per served model, drawn from samples over time.
    for (const name of ["mlp", "cnn"]) {
      expect(Number(await page.locator(`#latency-${name}`).getAttribute("data-points"))).toBeGreaterThanOrEqual(1);
    }
    // Recent events, each with its message: the failed load's reason as the index gives it, what
    // the reload did (from the model's metadata), the last failed request's status and error.
    const events = (await page.evaluate(
      `[...document.querySelectorAll("#events li")].map((li) => li.textContent ?? "")`,
    )) as string[];
    const broken = index.find((e) => e.name === "broken");
    expect(broken?.reason).toContain("executable_inputs");
    expect(events).toContainEqual(expect.stringContaining(`broken failed: ${broken?.reason}`));
    const mlp = (await (await fetch(`${worker.url}/v2/models/mlp`)).json()) as {
      xlaserve: { generation: number; programs: Array<{ outcome: string }> };
    };
    const programs = mlp.xlaserve.programs;
    const hitCount = programs.filter((p) => p.outcome === "hit").length;
    expect(events).toContainEqual(
      expect.stringMatching(
        new RegExp(
          `mlp reloaded: new version serving: generation ${mlp.xlaserve.generation}, loaded in \\d+ ms, ${hitCount} of ${programs.length} programs from the cache`,
        ),
      ),
    );
    expect(lastError).toContain(BAD_INPUT);
    expect(events).toContainEqual(expect.stringMatching(/^\S+ mlp errors: \d+ failed requests?, the last: /));
    expect(events.find((e) => e.includes("mlp errors"))).toEndWith(lastError);
    // Escaped: the input name is text on the page, no <i> element came from it.
    expect(await page.locator("#events i").count()).toBe(0);

    // Nothing but the worker was asked for anything (no CDN, no fonts).
    expect(requested.length).toBeGreaterThan(1);
    expect(requested.filter((u) => !u.startsWith(worker.url))).toEqual([]);

    const shot = await page.screenshot({ fullPage: true });
    expect(shot.byteLength).toBeGreaterThan(10_000);
    if (process.env.XLASERVE_TEST_SCREENSHOT === "1") {
      writeFileSync(resolve(import.meta.dir, "../../docs/status-page.png"), shot);
    }
  }, 120_000);
});
