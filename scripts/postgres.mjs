#!/usr/bin/env node
// A private PostgreSQL cluster for the fleet catalog's tests and benchmarks, made from Debian's
// `postgresql` package: installed when missing (root and apt-get), initialized in a directory of
// its own, started, and its URL printed. Idempotent: a cluster already running is left alone, a
// stopped one is started again. Never touches the package's own `main` cluster.
//
//   node scripts/postgres.mjs ensure [--dir D] [--listen ADDRS] [--port P]   prints the URL
//   node scripts/postgres.mjs stop [--dir D]
//
// The default directory is one per user and machine, shared by every checkout (tests make a
// database of their own in it); concurrent callers take turns through a lock directory. As root,
// the cluster runs as the package's `postgres` user, because PostgreSQL refuses to run as root.
import { execFileSync, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chownSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

const log = (msg) => console.error(`[postgres] ${msg}`);
const isRoot = typeof process.getuid === "function" && process.getuid() === 0;

export function defaultClusterDir() {
  const uid = typeof process.getuid === "function" ? process.getuid() : "user";
  return join(tmpdir(), `xlaserve-pg-uid${uid}`);
}

/** Runs fn while holding `<dir>.lock` (mkdir is atomic); a lock left for 2 minutes is stale. */
async function withLock(dir, fn) {
  const lock = `${dir}.lock`;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch (e) {
      if (e.code !== "EEXIST") throw e;
      try {
        if (Date.now() - statSync(lock).mtimeMs > 120_000) rmSync(lock, { recursive: true, force: true });
      } catch {
        /* released meanwhile */
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/** The newest installed server's bin directory, or null. */
export function findPgBin() {
  const base = "/usr/lib/postgresql";
  if (!existsSync(base)) return null;
  const versions = readdirSync(base)
    .filter((v) => existsSync(join(base, v, "bin", "pg_ctl")))
    .sort((a, b) => Number(b) - Number(a));
  return versions.length ? join(base, versions[0], "bin") : null;
}

function installPackage() {
  if (!isRoot || !existsSync("/usr/bin/apt-get")) {
    throw new Error("PostgreSQL is not installed and cannot be (needs root and apt-get): apt-get install postgresql");
  }
  log("installing PostgreSQL from Debian's packages (postgresql)");
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  const apt = (args) => spawnSync("apt-get", args, { stdio: ["ignore", "ignore", "inherit"], env }).status === 0;
  if (
    !apt(["install", "-y", "-qq", "postgresql"]) &&
    !(apt(["update", "-qq"]) && apt(["install", "-y", "-qq", "postgresql"]))
  ) {
    throw new Error("apt-get install postgresql failed");
  }
}

/** Runs a PostgreSQL binary as the cluster's owner. */
function asOwner(bin, args, opts = {}) {
  const [cmd, argv] = isRoot ? ["runuser", ["-u", "postgres", "--", bin, ...args]] : [bin, args];
  return execFileSync(cmd, argv, { stdio: ["ignore", "pipe", "pipe"], encoding: "utf8", ...opts });
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function readJson(path) {
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch {
    return null;
  }
}

function running(bin, data) {
  try {
    asOwner(join(bin, "pg_ctl"), ["status", "-D", data]);
    return true;
  } catch {
    return false;
  }
}

/**
 * Makes sure a cluster runs in `dir` and returns its connection URL (database `xlaserve`,
 * password authentication over TCP on `listen`).
 */
export async function ensurePostgres({ dir = defaultClusterDir(), listen = "127.0.0.1", port } = {}) {
  mkdirSync(dirname(dir), { recursive: true });
  return withLock(dir, () => ensureLocked(dir, listen, port));
}

async function ensureLocked(dir, listen, port) {
  let bin = findPgBin();
  if (!bin) {
    installPackage();
    bin = findPgBin();
    if (!bin) throw new Error("PostgreSQL was installed but no server binaries were found under /usr/lib/postgresql");
  }
  const data = join(dir, "data");
  const factsFile = join(dir, "cluster.json");
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  let facts = readJson(factsFile);
  if (!facts || !existsSync(join(data, "PG_VERSION"))) {
    facts = { port: port ?? (await freePort()), password: randomBytes(18).toString("base64url"), listen };
    const pwfile = join(dir, "pwfile");
    writeFileSync(pwfile, `${facts.password}\n`, { mode: 0o600 });
    if (isRoot) {
      chownSync(dir, uid("postgres"), gid("postgres"));
      chownSync(pwfile, uid("postgres"), gid("postgres"));
    }
    log(`initializing a cluster in ${data}`);
    asOwner(join(bin, "initdb"), [
      "-D",
      data,
      "-U",
      "postgres",
      "--auth-local=scram-sha-256",
      "--auth-host=scram-sha-256",
      `--pwfile=${pwfile}`,
      "-E",
      "UTF8",
      "--no-instructions",
    ]);
    // Clients in network namespaces the tests make connect over their own subnets.
    const hba = join(data, "pg_hba.conf");
    writeFileSync(hba, `${readFileSync(hba, "utf8")}\nhost all all 0.0.0.0/0 scram-sha-256\n`);
    writeFileSync(factsFile, JSON.stringify(facts), { mode: 0o600 });
  }
  if (!running(bin, data)) {
    log(`starting the cluster in ${data} on ${facts.listen}:${facts.port}`);
    const opts = `-c listen_addresses='${facts.listen}' -p ${facts.port} -k ${dir} -c fsync=off -c max_connections=200`;
    asOwner(join(bin, "pg_ctl"), ["start", "-w", "-t", "60", "-D", data, "-l", join(dir, "server.log"), "-o", opts]);
  }
  const host = facts.listen.split(",")[0].trim();
  const env = { ...process.env, PGPASSWORD: facts.password };
  const psql = (sql, db = "postgres") =>
    asOwner(join(bin, "psql"), ["-h", host, "-p", String(facts.port), "-U", "postgres", "-d", db, "-tAc", sql], {
      env,
    });
  if (psql("SELECT 1 FROM pg_database WHERE datname = 'xlaserve'").trim() !== "1") psql("CREATE DATABASE xlaserve");
  return `postgres://postgres:${facts.password}@${host}:${facts.port}/xlaserve`;
}

export function stopPostgres({ dir = defaultClusterDir() } = {}) {
  const bin = findPgBin();
  const data = join(dir, "data");
  if (!bin || !existsSync(join(data, "PG_VERSION")) || !running(bin, data)) return false;
  asOwner(join(bin, "pg_ctl"), ["stop", "-w", "-m", "fast", "-D", data]);
  return true;
}

function uid(user) {
  return Number(execFileSync("id", ["-u", user], { encoding: "utf8" }).trim());
}
function gid(user) {
  return Number(execFileSync("id", ["-g", user], { encoding: "utf8" }).trim());
}

function flag(argv, name) {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
}

if (process.argv[1] && new URL(import.meta.url).pathname === process.argv[1]) {
  const [command, ...argv] = process.argv.slice(2);
  const dir = flag(argv, "--dir");
  try {
    if (command === "ensure") {
      const port = flag(argv, "--port");
      const url = await ensurePostgres({
        ...(dir ? { dir } : {}),
        ...(flag(argv, "--listen") ? { listen: flag(argv, "--listen") } : {}),
        ...(port ? { port: Number(port) } : {}),
      });
      process.stdout.write(`${url}\n`);
    } else if (command === "stop") {
      log(stopPostgres(dir ? { dir } : {}) ? "stopped" : "not running");
    } else {
      log("usage: postgres.mjs ensure [--dir D] [--listen ADDRS] [--port P] | stop [--dir D]");
      process.exit(2);
    }
  } catch (e) {
    log(e.stderr ? `${e.message}\n${e.stderr}` : e.message);
    process.exit(1);
  }
}
