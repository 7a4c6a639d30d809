import type { AbstractBackend, Logger } from "@xlaserve/core";
import { XlaserveError, isXlaserveError } from "@xlaserve/core";
import type { Config } from "@xlaserve/core/config/schema.ts";
import { discoverPjrtPlugins } from "@xlaserve/core/engine/discover.ts";
import { type EngineChoice, type ProbeResult, selectEngine } from "@xlaserve/core/engine/select.ts";
import { readFileSync, readdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { FileMemo } from "./file-memo.ts";
import { memoizedProbe } from "./probe-memo.ts";
import { ThreadedBackend } from "../engine-thread/threaded-backend.ts";

/**
 * Engine selection (engine = auto | pjrt | reactant) and the backend it names. The backend packages
 * are imported lazily: the CPU engine's BLAS and the PJRT bindings are loaded only for the engine
 * actually chosen.
 */

type Loaded = Record<string, unknown>;

async function importPackage(name: string): Promise<Loaded> {
  // A variable specifier keeps the typechecker and the bundler from resolving it eagerly.
  const spec = name;
  return (await import(spec)) as Loaded;
}

export async function chooseEngine(config: Config, log: Logger): Promise<EngineChoice> {
  if (config.engine === "reactant") return selectEngine({ engine: "reactant", candidates: [], probe: () => noProbe });
  const discovery = discoverPjrtPlugins(config, { askPython: config.engine === "pjrt" || !!config.pjrt.plugin });
  let probe: (path: string) => ProbeResult | Promise<ProbeResult> = () => noProbe;
  // Without a candidate plugin nothing is probed: skip loading the PJRT bindings (tens of ms).
  if (discovery.candidates.length > 0) {
    try {
      const pjrt = await importPackage("@xlaserve/backend-pjrt");
      if (typeof pjrt.probePjrtPlugin === "function") {
        probe = pjrt.probePjrtPlugin as (path: string) => ProbeResult | Promise<ProbeResult>;
        // A plugin file that passed before (unchanged, same bindings) is not probed again.
        const bindings = config.cache.enabled ? bindingsKey() : null;
        if (bindings) probe = memoizedProbe(probe, resolve(config.cache.stateDir), bindings);
      }
    } catch (err) {
      log.debug("PJRT backend package unavailable", { error: String(err) });
    }
  }
  return selectEngine({ engine: config.engine, candidates: discovery.candidates, probe, searched: discovery.searched });
}

/**
 * What the probe's verdict depends on besides the plugin file: the bindings' declared layouts and
 * gate (backend-pjrt's abi/ and api/ sources) and the runtime.
 */
function bindingsKey(): string | null {
  let h = Bun.hash(Bun.version);
  try {
    const src = dirname(fileURLToPath(import.meta.resolve("@xlaserve/backend-pjrt")));
    for (const sub of ["abi", "api"]) {
      for (const f of readdirSync(join(src, sub)).sort()) h = Bun.hash(readFileSync(join(src, sub, f)), h);
    }
  } catch {
    return null; // unknown bindings: always probe
  }
  return h.toString(16);
}

const noProbe: ProbeResult = { ok: false, code: "PLUGIN_NOT_FOUND", message: "the PJRT backend is not available" };

export async function createBackend(
  choice: EngineChoice,
  config: Config,
  opts: { engineThread?: boolean; log?: Logger } = {},
): Promise<AbstractBackend> {
  if (choice.engine === "pjrt") {
    const pjrt = await importPackage("@xlaserve/backend-pjrt");
    const create = pjrt.createPjrtBackend as ((o: unknown) => AbstractBackend | Promise<AbstractBackend>) | undefined;
    if (!create) throw new XlaserveError("UNSUPPORTED", "@xlaserve/backend-pjrt exports no createPjrtBackend");
    if (!choice.plugin?.path) throw new XlaserveError("PLUGIN_NOT_FOUND", "engine=pjrt but no plugin was selected");
    const pluginPath = choice.plugin.path;
    // The partition names the plugin build by a hash of its file (rule 2): several hundred MB read
    // on every start. Remembered per unchanged file in the state directory instead.
    const hashes = config.cache.enabled
      ? new FileMemo<string>(resolve(config.cache.stateDir), "pjrt-plugin-hash.json")
      : null;
    const known = hashes?.get(pluginPath, "sha256/16");
    const hashOf = pjrt.pluginFileHash as ((path: string) => string) | undefined;
    const pluginFileHash = known ?? hashOf?.(pluginPath);
    if (hashes && !known && pluginFileHash) hashes.set(pluginPath, "sha256/16", pluginFileHash);
    const options = {
      pluginPath,
      memoryFraction: config.pjrt.memoryFraction,
      preallocate: config.pjrt.preallocate,
      isolateCompile: config.pjrt.compileInChild,
      loadThreads: config.pjrt.loadThreads,
      hedgeLoads: config.pjrt.hedgeLoads,
      eventWait: config.pjrt.eventWait,
      autoPollMs: config.pjrt.autoPollMs,
      pluginFileHash,
    };
    if (opts.engineThread ?? true) {
      // PJRT_LoadedExecutable_Execute does the launch work on the calling thread (about 1 ms for
      // ResNet-50 at batch 1, 2 ms at 32, measured on the H200), and loads and weight uploads take
      // tens of ms: on the engine thread none of it holds up HTTP requests.
      try {
        return await ThreadedBackend.create({
          module: "@xlaserve/backend-pjrt",
          export: "createPjrtBackend",
          args: options,
        });
      } catch (err) {
        if (isXlaserveError(err) && err.code !== "INTERNAL") throw err;
        opts.log?.warn("the PJRT backend could not start on its own thread; running it on the main thread", {
          error: String(err),
        });
      }
    }
    return await create(options);
  }
  if (opts.engineThread ?? true) {
    // The CPU engine computes on the calling thread; give it its own so requests never stall the
    // HTTP event loop.
    try {
      return await ThreadedBackend.create({ module: "@xlaserve/backend-reactant", export: "createReactantBackend" });
    } catch (err) {
      opts.log?.warn("the CPU engine could not start on its own thread; running it on the main thread", {
        error: String(err),
      });
    }
  }
  let reactant: Loaded;
  try {
    reactant = await importPackage("@xlaserve/backend-reactant");
  } catch (err) {
    throw new XlaserveError(
      "UNSUPPORTED",
      `the CPU engine (@xlaserve/backend-reactant) cannot be loaded: ${String(err)}`,
    );
  }
  const create = reactant.createReactantBackend as (() => AbstractBackend | Promise<AbstractBackend>) | undefined;
  if (!create) throw new XlaserveError("UNSUPPORTED", "@xlaserve/backend-reactant exports no createReactantBackend");
  return await create();
}
