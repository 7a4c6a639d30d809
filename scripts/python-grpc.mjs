#!/usr/bin/env node
// A Python environment with grpcio, grpcio-tools and numpy for the interop test that drives the
// gRPC service from a client nobody here wrote (tests/e2e/grpc-python.test.ts), in
// .state/python-grpc. pip first; where no package index answers, Debian's packages
// (python3-grpcio, python3-grpc-tools, python3-protobuf, python3-numpy) under a virtual
// environment of Debian's own python that sees the standard library and Debian's dist-packages
// only, so a newer protobuf that pip put elsewhere cannot shadow the one Debian's grpc_tools was
// built against. Re-running is cheap (a marker file); a machine with neither is told so, not failed.
//   node scripts/python-grpc.mjs          prints the environment's python on its last line
import { execFileSync, execSync } from "node:child_process";
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pipVenv } from "./pip-venv.mjs";

const root = new URL("..", import.meta.url).pathname;
const venv = join(root, ".state", "python-grpc");
const python = join(venv, "bin", "python");
const marker = join(venv, ".xlaserve-ready");
const PIP_PACKAGES = ["grpcio", "grpcio-tools", "numpy"];
const DEBIAN_PACKAGES = ["python3-grpcio", "python3-grpc-tools", "python3-protobuf", "python3-numpy"];
const DEBIAN_PYTHON = "/usr/bin/python3";
const DEBIAN_SITE = "/usr/lib/python3/dist-packages";
const log = (msg) => console.error(`[python-grpc] ${msg}`);

// Importing is not enough: the stubs grpc_tools writes must load against the protobuf runtime
// the same interpreter finds, which is where mixed pip and Debian installs break.
const CHECK = `
import sys, tempfile, grpc, numpy
from grpc_tools import protoc
out = tempfile.mkdtemp()
for name in ("model_config.proto", "grpc_service.proto"):
    if protoc.main(["protoc", "-I" + sys.argv[1], "--python_out=" + out, "--grpc_python_out=" + out, name]) != 0:
        raise SystemExit("protoc failed on " + name)
sys.path.insert(0, out)
import grpc_service_pb2, grpc_service_pb2_grpc
print(grpc.__version__)
`;

function works(exe) {
  try {
    execFileSync(exe, ["-c", CHECK, join(root, "packages", "server", "proto")], { stdio: "ignore", timeout: 120_000 });
    return true;
  } catch {
    return false;
  }
}

function has(cmd) {
  try {
    execFileSync(cmd, ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

function viaPip() {
  return has("python3") && pipVenv({ venv, packages: PIP_PACKAGES, timeoutMs: 600_000, log }) && works(python);
}

function debianInstalled() {
  return DEBIAN_PACKAGES.every((p) => {
    try {
      return execFileSync("dpkg-query", ["-W", `-f=$\{Status}`, p], { encoding: "utf8" }).includes(
        "install ok installed",
      );
    } catch {
      return false;
    }
  });
}

function viaDebian() {
  if (!existsSync(DEBIAN_PYTHON)) return false;
  if (!debianInstalled()) {
    const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
    if (!isRoot || !existsSync("/usr/bin/apt-get")) {
      log(`${DEBIAN_PACKAGES.join(", ")} are not installed and cannot be (needs root and apt-get)`);
      return false;
    }
    log(`installing ${DEBIAN_PACKAGES.join(", ")} from Debian's packages`);
    const list = DEBIAN_PACKAGES.join(" ");
    try {
      execSync(
        `DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ${list} >/dev/null 2>&1 || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ${list} >/dev/null)`,
        { stdio: ["ignore", "ignore", "inherit"] },
      );
    } catch {
      log("apt-get could not install them");
      return false;
    }
  }
  rmSync(venv, { recursive: true, force: true });
  log(`creating ${venv} over Debian's python3 and its dist-packages`);
  // --without-pip: Debian's python has no ensurepip unless python3-venv is installed, and this
  // environment installs nothing itself.
  execFileSync(DEBIAN_PYTHON, ["-m", "venv", "--without-pip", venv], { stdio: "ignore" });
  const site = execFileSync(python, ["-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], {
    encoding: "utf8",
  }).trim();
  writeFileSync(join(site, "debian-dist-packages.pth"), `${DEBIAN_SITE}\n`);
  return works(python);
}

function ready() {
  return existsSync(marker) && works(python);
}

if (!ready()) {
  const how = viaPip() ? "pip" : viaDebian() ? "debian" : null;
  if (!how) {
    rmSync(venv, { recursive: true, force: true });
    log("no Python with grpcio and grpcio-tools could be set up: the Python gRPC interop test will skip");
    process.exit(0);
  }
  writeFileSync(marker, `${how}\n`);
  log(`ready (${how})`);
}
console.log(python);
