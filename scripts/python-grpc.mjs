#!/usr/bin/env node
// A Python virtual environment with grpcio, grpcio-tools and numpy from pip, for the interop test
// that drives the gRPC service from a client nobody here wrote (tests/e2e/grpc-python.test.ts).
// Re-running is cheap (a marker file); a machine without python3 or pip is told so, not failed.
//   node scripts/python-grpc.mjs          prints the environment's python on its last line
import { execFileSync } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const venv = join(root, ".state", "python-grpc");
const python = join(venv, "bin", "python");
const marker = join(venv, ".xlaserve-ready");
const PACKAGES = ["grpcio", "grpcio-tools", "numpy"];
const log = (msg) => console.error(`[python-grpc] ${msg}`);

function ready() {
  if (!existsSync(marker)) return false;
  try {
    execFileSync(python, ["-c", "import grpc, grpc_tools, numpy"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

if (!ready()) {
  try {
    execFileSync("python3", ["--version"], { stdio: "ignore" });
  } catch {
    log("python3 is not installed: the Python gRPC interop test will skip");
    process.exit(0);
  }
  try {
    log(`creating ${venv} with ${PACKAGES.join(", ")} (pip)`);
    // System site packages: pip then finds what the machine already has (numpy, typing
    // extensions) instead of asking an index for it.
    execFileSync("python3", ["-m", "venv", "--system-site-packages", venv], { stdio: "inherit" });
    execFileSync(python, ["-m", "pip", "install", "-q", "--retries", "1", "--timeout", "15", ...PACKAGES], {
      stdio: "inherit",
    });
    execFileSync(python, ["-c", "import grpc, grpc_tools, numpy"], { stdio: "inherit" });
    writeFileSync(marker, `${PACKAGES.join(" ")}\n`);
  } catch (error) {
    log(`could not install ${PACKAGES.join(", ")} with pip (${error.message}): the Python gRPC interop test will skip`);
    process.exit(0);
  }
}
console.log(python);
