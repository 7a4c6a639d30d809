/**
 * One worker process of the race test: opens the shared cache, waits for the common start
 * time, asks for every module of the bundle at once and prints what it got as one JSON line.
 * Usage: bun race-child.ts <bundleDir> <stateDir> <compileLog> <startAtEpochMs>
 */
import { ProgramCache } from "../../src/program-cache.ts";
import { MODULES, reloadBundle } from "./fixtures.ts";
import { BASE_IDENTITY, HashBackend, runProgram } from "./hash-backend.ts";

const [bundleDir, stateDir, compileLog, startAt] = process.argv.slice(2) as [string, string, string, string];
const warnings: string[] = [];
const cache = await ProgramCache.open({ stateDir, onWarning: (w) => warnings.push(w.kind), lockPollMs: 10 });
const bundle = reloadBundle(bundleDir, "m", Object.keys(MODULES));
const backend = new HashBackend(BASE_IDENTITY, { compileDelayMs: 400, compileLog });
await Bun.sleep(Math.max(0, Number(startAt) - Date.now()));
const results = await Promise.all(
  bundle.modules.map(async (module) => {
    const r = await cache.getOrCompile({ bundle, module, backend, options: { deterministic: true } });
    const out = await runProgram(backend, r.executable);
    return { file: module.file, outcome: r.outcome, output: new Bun.CryptoHasher("sha256").update(out).digest("hex") };
  }),
);
cache.syncModuleHashes(bundle);
const rows = cache.ls().length;
cache.close();
console.log(JSON.stringify({ pid: process.pid, results, warnings, rows }));
