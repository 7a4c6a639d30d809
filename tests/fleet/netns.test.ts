import { afterAll, beforeAll, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { chmodSync, cpSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve, sep } from "node:path";
import { waitFor } from "../e2e/helpers.ts";
import { makeTestNet, netnsUnavailable, type TestNet } from "./hosts.ts";

/**
 * The fleet as separate hosts: PostgreSQL (Debian's package, started by scripts/postgres.mjs)
 * in the test's namespace, and workers each in a network namespace of its own with its own
 * address, sharing one blob directory (an NFS volume's stand-in). Each worker has its own copy
 * of the model repository and its own state directory, as pods do.
 */
const ROOT = resolve(import.meta.dir, "../..");
const MAIN = join(ROOT, "apps/worker/src/main.ts");
const EXAMPLES = join(ROOT, "examples/models");
const PORT = 8000;
const HOSTS = 7;

const unavailable = netnsUnavailable();
if (unavailable) console.warn(`[skip] fleet on network namespaces: ${unavailable}`);

let net: TestNet;
let tmp: string;
let pgDir: string;
let catalogUrl: string;
let admin: InstanceType<typeof Bun.SQL>;
const running: { kill(sig?: number | NodeJS.Signals): void; exitCode: number | null; exited: Promise<number> }[] = [];

beforeAll(async () => {
  if (unavailable) return;
  net = makeTestNet(HOSTS);
  tmp = mkdtempSync(join(tmpdir(), "xlaserve-fleet-netns-"));
  chmodSync(tmp, 0o755); // as root, PostgreSQL runs as its own user and must reach its directory
  pgDir = join(tmp, "pg");
  const r = spawnSync("node", [join(ROOT, "scripts/postgres.mjs"), "ensure", "--dir", pgDir, "--listen", net.gateway], {
    encoding: "utf8",
  });
  if (r.status !== 0) throw new Error(`PostgreSQL did not start: ${r.stderr}`);
  catalogUrl = r.stdout.trim();
  admin = new Bun.SQL(catalogUrl, { max: 1 });
  await admin.unsafe("CREATE DATABASE takeover");
}, 120_000);

afterAll(async () => {
  if (unavailable) return;
  for (const p of running) if (p.exitCode === null) p.kill("SIGKILL");
  await Promise.all(running.map((p) => p.exited));
  await admin?.close();
  spawnSync("node", [join(ROOT, "scripts/postgres.mjs"), "stop", "--dir", pgDir]);
  net.remove();
  rmSync(tmp, { recursive: true, force: true });
}, 60_000);

interface Worker {
  readonly host: number;
  readonly url: string;
  readonly lines: string[];
  readonly proc: ReturnType<typeof Bun.spawn>;
}

function startWorker(
  host: number,
  opts: { database?: string; blobs?: string; env?: Record<string, string> } = {},
): Worker {
  const repo = join(tmp, `host${host}`, "models");
  // The bundles only: examples/models may hold a .cache/ from other runs.
  cpSync(EXAMPLES, repo, {
    recursive: true,
    filter: (path) => !relative(EXAMPLES, path).split(sep).includes(".cache"),
  });
  const address = net.hosts[host]!.address;
  const url = catalogUrl.replace(/\/[^/]*$/, `/${opts.database ?? "xlaserve"}`);
  const proc = Bun.spawn(
    net.argv(host, [
      process.execPath,
      MAIN,
      "serve",
      "--host",
      address,
      "--port",
      String(PORT),
      "--repository",
      repo,
      "--state-dir",
      join(tmp, `host${host}`, "state"),
      "--cache-store",
      opts.blobs ?? join(tmp, "blobs"),
      "--cache-catalog",
      url,
      "--no-watch",
      "--log-format",
      "text",
    ]),
    { stdout: "pipe", stderr: "pipe", env: { ...process.env, XLASERVE_BLAS_THREADS: "1", ...opts.env } },
  );
  running.push(proc);
  const lines: string[] = [];
  for (const s of [proc.stdout, proc.stderr] as ReadableStream<Uint8Array>[]) {
    (async () => {
      let rest = "";
      for await (const chunk of s) {
        const parts = (rest + new TextDecoder().decode(chunk)).split("\n");
        rest = parts.pop() ?? "";
        lines.push(...parts);
      }
    })();
  }
  return { host, url: `http://${address}:${PORT}`, lines, proc };
}

const isReady = (w: Worker) => w.lines.some((l) => l.includes("ready in"));
const waitReady = (w: Worker, ms = 90_000) =>
  waitFor(() => {
    if (w.proc.exitCode !== null) throw new Error(`worker ${w.host} exited ${w.proc.exitCode}:\n${w.lines.join("\n")}`);
    return isReady(w);
  }, ms);

/** One request per model, from its metadata, with deterministic inputs; the answers' bytes. */
async function answers(w: Worker): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const model of readdirSync(EXAMPLES).sort()) {
    const meta = (await (await fetch(`${w.url}/v2/models/${model}`)).json()) as {
      inputs: { name: string; datatype: string; shape: number[] }[];
    };
    const inputs = meta.inputs.map((i) => {
      const shape = i.shape.map((d) => (d < 0 ? 1 : d));
      const n = shape.reduce((a, b) => a * b, 1);
      const data = Array.from({ length: n }, (_, k) => (i.datatype.startsWith("FP") ? Math.sin(k) : k % 7));
      return { name: i.name, shape, datatype: i.datatype, data };
    });
    const r = await fetch(`${w.url}/v2/models/${model}/infer`, { method: "POST", body: JSON.stringify({ inputs }) });
    expect(r.status).toBe(200);
    out[model] = await r.text();
  }
  return out;
}

async function compiles(database: string) {
  const sql = new Bun.SQL(catalogUrl.replace(/\/[^/]*$/, `/${database}`), { max: 1 });
  try {
    return (await sql`SELECT key, holder, finished_at FROM fleet_compiles ORDER BY started_at`) as {
      key: string;
      holder: string;
      finished_at: string | null;
    }[];
  } finally {
    await sql.close();
  }
}

/** Every published blob matches its catalog checksum. */
async function expectBlobsIntact(database: string, blobs: string): Promise<number> {
  const sql = new Bun.SQL(catalogUrl.replace(/\/[^/]*$/, `/${database}`), { max: 1 });
  try {
    const rows = (await sql`SELECT blob, blob_sha256 FROM fleet_programs`) as { blob: string; blob_sha256: string }[];
    for (const r of rows) {
      const bytes = readFileSync(join(blobs, r.blob));
      expect(new Bun.CryptoHasher("sha256").update(bytes).digest("hex")).toBe(r.blob_sha256);
    }
    return rows.length;
  } finally {
    await sql.close();
  }
}

const programCount = readdirSync(EXAMPLES)
  .flatMap((m) => readdirSync(join(EXAMPLES, m)))
  .filter((f) => /^model.*\.mlir$/.test(f)).length;

test.skipIf(unavailable !== null)(
  "4 hosts on a cold fleet cache compile each program once and answer alike; a 5th compiles nothing",
  async () => {
    const first = [0, 1, 2, 3].map((h) => startWorker(h));
    await Promise.all(first.map((w) => waitReady(w)));
    const rows = await compiles("xlaserve");
    expect(rows.length).toBe(programCount); // started, across all four hosts
    expect(new Set(rows.map((r) => r.key)).size).toBe(programCount);
    expect(rows.every((r) => r.finished_at !== null)).toBe(true);
    const all = await Promise.all(first.map(answers));
    for (const a of all.slice(1)) expect(a).toEqual(all[0]!);

    const late = startWorker(4);
    await waitReady(late);
    expect((await compiles("xlaserve")).length).toBe(programCount);
    expect(await answers(late)).toEqual(all[0]!);
    expect(late.lines.some((l) => /cache="?\d+\/\d+ hit/.test(l))).toBe(true);
    expect(await expectBlobsIntact("xlaserve", join(tmp, "blobs"))).toBe(programCount);
    for (const w of [...first, late])
      expect(w.lines.filter((l) => /fleet-bad-blob|fleet-unavailable/.test(l))).toEqual([]);
  },
  150_000,
);

test.skipIf(unavailable !== null)(
  "kill -9 of the lease holder mid-compile: another host takes the lease over and finishes within lease + one compile",
  async () => {
    const leaseMs = 2000;
    const blobs = join(tmp, "blobs-takeover");
    const env = { XLASERVE_CACHE__LEASE_MS: String(leaseMs) };
    const holder = startWorker(5, {
      database: "takeover",
      blobs,
      env: { ...env, XLASERVE_TEST_COMPILE_DELAY_MS: "60000" },
    });
    const sql = new Bun.SQL(catalogUrl.replace(/\/[^/]*$/, "/takeover"), { max: 1 });
    await waitFor(async () => {
      if (holder.proc.exitCode !== null) throw new Error(`holder exited:\n${holder.lines.join("\n")}`);
      // The holder takes its lease before it records the compile it starts: kill it only once
      // that compile is on record, or the takeover has no dead holder's compile to show.
      const [row] = await sql`SELECT count(*)::int AS n FROM fleet_compiles WHERE finished_at IS NULL`.catch(() => [
        { n: 0 },
      ]);
      return row.n >= 1;
    }, 60_000);
    await sql.close();
    holder.proc.kill("SIGKILL");
    await holder.proc.exited;
    const killedAt = performance.now();
    const next = startWorker(6, { database: "takeover", blobs, env });
    await waitReady(next);
    const tookMs = performance.now() - killedAt;
    console.log(`  lease holder killed; the next host was ready ${Math.round(tookMs)} ms later (lease ${leaseMs} ms)`);
    const rows = await compiles("takeover");
    const finished = rows.filter((r) => r.finished_at !== null);
    expect(new Set(finished.map((r) => r.key)).size).toBe(programCount);
    expect(finished.length).toBe(programCount); // one finished compile per program
    // Holders are "<hostname>:<pid>": every finished compile is the second host's, and the dead
    // holder's compiles were started and never finished.
    expect(finished.every((r) => r.holder.endsWith(`:${next.proc.pid}`))).toBe(true);
    const unfinished = rows.filter((r) => r.finished_at === null);
    expect(unfinished.length).toBeGreaterThan(0);
    expect(unfinished.every((r) => r.holder.endsWith(`:${holder.proc.pid}`))).toBe(true);
    expect(next.lines.some((l) => l.includes("took over the lapsed compile lease"))).toBe(true);
    // The lease, plus starting a worker and compiling everything once, with room for a loaded machine.
    expect(tookMs).toBeLessThan(leaseMs + 30_000);
    const first = startWorker(5, { database: "takeover", blobs, env });
    await waitReady(first);
    expect(await answers(next)).toEqual(await answers(first));
    expect((await compiles("takeover")).filter((r) => r.finished_at !== null).length).toBe(programCount);
    expect(await expectBlobsIntact("takeover", blobs)).toBe(programCount);
  },
  150_000,
);
