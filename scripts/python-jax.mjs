#!/usr/bin/env node
// A Python environment with JAX 0.10.2 (the CPU build), flax, safetensors and flatbuffers for the tests that
// export bundles with tools/export_jax_bundle.py (tests/e2e/portable-bundles.test.ts), in
// .state/python-jax. A python3 that already imports them is used as it is; otherwise pip installs
// them into the environment. Debian packages no JAX, so a machine without a package index is told
// so and those tests skip. Re-running is cheap (a marker file).
//   node scripts/python-jax.mjs          prints the python to use on its last line
import { execFileSync } from "node:child_process";
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pipVenv } from "./pip-venv.mjs";

const root = new URL("..", import.meta.url).pathname;
const venv = join(root, ".state", "python-jax");
const python = join(venv, "bin", "python");
const marker = join(venv, ".xlaserve-ready");
// flatbuffers: jax.export needs it to read the JAX exports the zoo benchmark runs as XLA CPU.
const PIP_PACKAGES = ["jax==0.10.2", "jaxlib==0.10.2", "flax", "safetensors", "flatbuffers"];
const log = (msg) => console.error(`[python-jax] ${msg}`);

function works(exe) {
  try {
    execFileSync(exe, ["-c", "import jax, flax, safetensors, flatbuffers; jax.numpy.zeros(1).block_until_ready()"], {
      stdio: "ignore",
      timeout: 120_000,
      env: { ...process.env, JAX_PLATFORMS: "cpu" },
    });
    return true;
  } catch {
    return false;
  }
}

function viaPip() {
  return (
    pipVenv({ venv, packages: PIP_PACKAGES, timeoutMs: 900_000, note: "; a minute or two the first time", log }) &&
    works(python)
  );
}

let chosen = null;
if (existsSync(marker) && works(python)) chosen = python;
else if (works("python3")) chosen = "python3";
else if (viaPip()) {
  writeFileSync(marker, "pip\n");
  log("ready (pip)");
  chosen = python;
} else {
  rmSync(venv, { recursive: true, force: true });
  log("no Python with jax, flax and safetensors could be set up: the bundle-export tests will skip");
  process.exit(0);
}
console.log(chosen);
