import { XlaserveError } from "@xlaserve/core";
import type { ModelRegistryView, RepositoryEntry, ServedModel, ServerInfo } from "../../src/contract.ts";
import { checksModel, mlpLikeModel, transformerLikeModel } from "./example-like-models.ts";
import { CLIENT_DTYPES, type FunctionModel, affineModel, echoModel, faultyModel, sumModel } from "./test-models.ts";

/**
 * A registry over in-process function models: the server's tests exercise the real HTTP stack
 * and codec against models whose answers are known exactly.
 */
export class TestRegistry implements ModelRegistryView {
  readonly models = new Map<string, FunctionModel>();
  /** Bundles known to the repository but not loaded (name -> reason). */
  readonly unloaded = new Map<string, string>();
  ready = true;
  readonly calls: string[] = [];

  constructor() {
    const all = [
      affineModel(),
      sumModel(),
      faultyModel(),
      mlpLikeModel(),
      transformerLikeModel(),
      checksModel(),
      ...CLIENT_DTYPES.map(echoModel),
    ];
    for (const model of all) this.models.set(model.name, model);
    const cold = affineModel();
    Object.assign(cold, { name: "cold" });
    cold.readyFlag = false;
    this.models.set("cold", cold);
    this.unloaded.set("broken", "manifest.yaml: executable_inputs is missing");
  }

  serverInfo(): ServerInfo {
    return {
      name: "xlaserve",
      version: "0.1.0-test",
      extensions: ["binary_tensor_data"],
      extra: { engine: "test", engine_reason: "test registry", plugin: null, device: "host" },
    };
  }

  isLive(): boolean {
    return true;
  }

  isReady(): boolean {
    return this.ready;
  }

  repositoryIndex(): RepositoryEntry[] {
    const entries: RepositoryEntry[] = [...this.models.values()].map((m) => ({
      name: m.name,
      version: m.version,
      state: m.ready() ? "READY" : "LOADING",
      reason: m.ready() ? "" : "warming up",
    }));
    for (const [name, reason] of this.unloaded) entries.push({ name, version: "1", state: "UNAVAILABLE", reason });
    return entries;
  }

  getModel(name: string, version?: string): ServedModel | undefined {
    const model = this.models.get(name);
    if (!model || (version !== undefined && version !== model.version)) return undefined;
    return model;
  }

  async load(name: string): Promise<void> {
    this.calls.push(`load ${name}`);
    if (name === "broken") throw new XlaserveError("BUNDLE_INVALID", "manifest.yaml: executable_inputs is missing");
    if (!this.models.has(name) && !this.unloaded.has(name)) throw new XlaserveError("NOT_FOUND", `no bundle "${name}"`);
    if (!this.models.has(name)) {
      const model = affineModel();
      Object.assign(model, { name });
      this.models.set(name, model);
      this.unloaded.delete(name);
    }
  }

  async unload(name: string): Promise<void> {
    this.calls.push(`unload ${name}`);
    if (!this.models.delete(name)) throw new XlaserveError("NOT_FOUND", `model "${name}" is not loaded`);
    this.unloaded.set(name, "unloaded");
  }
}
