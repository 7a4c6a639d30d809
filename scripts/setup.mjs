#!/usr/bin/env node
// One-time set-up for `npm start` / `npm test` on a fresh Debian machine that has only Node and npm:
// installs the workspace's packages (Bun itself comes from npm) and OpenBLAS from Debian's
// packages; for the tests also Chromium, a private PostgreSQL cluster (Debian's packages) and the
// Python clients and JAX. Re-running is cheap: each step checks before it acts.
import { execSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { ensurePostgres } from "./postgres.mjs";

const root = new URL("..", import.meta.url).pathname;
const log = (msg) => console.error(`[setup] ${msg}`);
const run = (cmd) => execSync(cmd, { cwd: root, stdio: ["ignore", "inherit", "inherit"] });

function packagesInstalled() {
  const bun = join(root, "node_modules", ".bin", "bun");
  const marker = join(root, "node_modules", ".package-lock.json");
  if (!existsSync(bun) || !existsSync(marker)) return false;
  const lock = join(root, "package-lock.json");
  return !existsSync(lock) || statSync(marker).mtimeMs >= statSync(lock).mtimeMs;
}

const openblasCandidates = [
  "/usr/lib/x86_64-linux-gnu/libopenblas.so.0",
  "/usr/lib/aarch64-linux-gnu/libopenblas.so.0",
  "/usr/lib64/libopenblas.so.0",
  "/usr/lib/libopenblas.so.0",
];

function ensureOpenBlas() {
  if (process.env.XLASERVE_BLAS_LIBRARY || openblasCandidates.some((p) => existsSync(p))) return;
  const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
  if (!isRoot || !existsSync("/usr/bin/apt-get")) {
    log(
      "OpenBLAS not found and cannot install it (needs root and apt-get): the CPU engine will use its slower TypeScript GEMM",
    );
    return;
  }
  log("installing OpenBLAS from Debian's packages (libopenblas0-pthread)");
  try {
    run(
      "apt-get install -y -qq libopenblas0-pthread >/dev/null 2>&1 || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libopenblas0-pthread)",
    );
  } catch {
    log("OpenBLAS install failed: the CPU engine will use its slower TypeScript GEMM");
  }
}

// The status page's browser test drives Debian's chromium; it skips, saying why, without it.
function ensureChromium() {
  if (existsSync("/usr/bin/chromium")) return;
  const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
  if (!isRoot || !existsSync("/usr/bin/apt-get")) {
    log("chromium not found and cannot install it (needs root and apt-get): the status page's browser test will skip");
    return;
  }
  log("installing chromium from Debian's packages (for the status page's browser test)");
  try {
    run(
      "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1 || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null)",
    );
  } catch {
    log("chromium install failed: the status page's browser test will skip");
  }
}

if (!packagesInstalled()) {
  log("installing workspace packages with npm (Bun included)");
  run(existsSync(join(root, "package-lock.json")) ? "npm ci --no-audit --no-fund" : "npm install --no-audit --no-fund");
}
ensureOpenBlas();

// What only the tests use (Chromium, PostgreSQL, the Python clients and JAX) is set up for
// `npm test` and a direct run, not for `npm start`: the worker on its embedded defaults needs
// none of it, and a first start should not wait for browser and Python installs.
if (process.env.npm_lifecycle_event !== "prestart") await setUpTestDependencies();

async function setUpTestDependencies() {
  ensureChromium();

  // The fleet catalog's PostgreSQL tests connect to this cluster; they skip, saying why, without it.
  try {
    await ensurePostgres();
  } catch (e) {
    log(`PostgreSQL unavailable (${e.message.split("\n")[0]}): the fleet catalog's PostgreSQL tests will skip`);
  }
  // Python's grpcio for the gRPC interop test, from pip or else Debian's packages (the test skips
  // itself without it); never fails the set-up.
  try {
    execSync("node scripts/python-grpc.mjs", { cwd: root, stdio: ["ignore", "ignore", "inherit"] });
  } catch {
    log("the Python gRPC client could not be installed: its interop test will skip");
  }
  // JAX, flax and safetensors for the tests that export bundles with tools/export_jax_bundle.py
  // (they skip themselves without it); never fails the set-up.
  try {
    execSync("node scripts/python-jax.mjs", { cwd: root, stdio: ["ignore", "ignore", "inherit"] });
  } catch {
    log("JAX could not be installed: the bundle-export tests will skip");
  }
}
