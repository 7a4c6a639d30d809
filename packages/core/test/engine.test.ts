import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type PluginProbe, XlaserveError, discoverPjrtPlugins, selectEngine } from "../src/index.ts";

/**
 * Plugins here are real files in temp site-packages trees; the probe stands in for the FFI load
 * (core has none) and decides by file content, the way a version check decides by the table.
 */

const root = mkdtempSync(join(tmpdir(), "xlaserve-engine-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function plugin(relative: string, content: string): string {
  const path = join(root, relative);
  mkdirSync(join(path, ".."), { recursive: true });
  writeFileSync(path, content);
  return path;
}

const probe: PluginProbe = async (path) => {
  const content = await Bun.file(path).text();
  if (content === "good") return { ok: true, facts: { pjrtApiVersion: "0.90", structSize: 1234 } };
  if (content === "throws") throw new Error("dlopen failed: undefined symbol GetPjrtApi");
  return { ok: false, code: "PLUGIN_VERSION_MISMATCH", message: `api version ${content} is not supported` };
};

const siteA = join(root, "venv-a", "lib", "python3.12", "site-packages");
const siteB = join(root, "venv-b", "lib", "python3.12", "site-packages");
const cudaPlugin = plugin("venv-a/lib/python3.12/site-packages/jax_plugins/xla_cuda13/xla_cuda_plugin.so", "good");
plugin("venv-a/lib/python3.12/site-packages/jax_plugins/xla_cuda13/__init__.py", "");
const oldPlugin = plugin("venv-b/lib/python3.12/site-packages/jax_plugins/xla_cuda12/xla_cuda_plugin.so", "0.54");
const configured = plugin("custom/libtpu.so", "0.60");
const noPjrt = { pjrt: {} };

describe("discoverPjrtPlugins", () => {
  test("finds jax_plugins/*/*.so under the given site-packages, in order", () => {
    const found = discoverPjrtPlugins(noPjrt, { env: {}, sitePackages: [siteB, siteA] });
    expect(found.candidates).toEqual([
      { path: oldPlugin, source: "python", origin: siteB, exists: true },
      { path: cudaPlugin, source: "python", origin: siteA, exists: true },
    ]);
    expect(found.searched).toEqual([join(siteB, "jax_plugins"), join(siteA, "jax_plugins")]);
  });

  test("an explicit config path wins over env and site-packages", () => {
    const found = discoverPjrtPlugins(
      { pjrt: { plugin: configured } },
      { env: { XLASERVE_PJRT_PLUGIN: oldPlugin }, sitePackages: [siteA] },
    );
    expect(found.candidates).toEqual([{ path: configured, source: "config", origin: "pjrt.plugin", exists: true }]);
  });

  test("the env variable wins over site-packages, and is credited when the config loader copied it", () => {
    const env = { XLASERVE_PJRT_PLUGIN: oldPlugin };
    for (const config of [noPjrt, { pjrt: { plugin: oldPlugin } }]) {
      const found = discoverPjrtPlugins(config, { env, sitePackages: [siteA] });
      expect(found.candidates).toEqual([
        { path: oldPlugin, source: "env", origin: "XLASERVE_PJRT_PLUGIN", exists: true },
      ]);
    }
  });

  test("a missing explicit path is still reported, marked as missing", () => {
    const found = discoverPjrtPlugins({ pjrt: { plugin: join(root, "nope.so") } }, { env: {} });
    expect(found.candidates[0]?.exists).toBe(false);
  });

  test("the default roots scan runs without error on a machine without plugins", () => {
    const found = discoverPjrtPlugins(noPjrt, { env: {}, askPython: false });
    expect(Array.isArray(found.candidates)).toBe(true);
  });
});

describe("selectEngine", () => {
  test("auto picks the first plugin that probes ok, with facts and a reason", async () => {
    const { candidates } = discoverPjrtPlugins(noPjrt, { env: {}, sitePackages: [siteB, siteA] });
    const choice = await selectEngine({ engine: "auto", candidates, probe });
    expect(choice.engine).toBe("pjrt");
    expect(choice.plugin).toEqual({ path: cudaPlugin, facts: { pjrtApiVersion: "0.90", structSize: 1234 } });
    expect(choice.reason).toContain(cudaPlugin);
  });

  test("auto with no plugin falls back to reactant and says where it looked", async () => {
    const found = discoverPjrtPlugins(noPjrt, { env: {}, sitePackages: [join(root, "empty")] });
    const choice = await selectEngine({ engine: "auto", ...found, probe });
    expect(choice).toEqual({
      engine: "reactant",
      reason: `engine=auto fell back to the CPU engine: no PJRT plugin found (looked in ${join(root, "empty", "jax_plugins")})`,
    });
  });

  test("auto with a mismatched plugin falls back with the probe's code and message", async () => {
    const found = discoverPjrtPlugins(noPjrt, { env: {}, sitePackages: [siteB] });
    const choice = await selectEngine({ engine: "auto", ...found, probe });
    expect(choice.engine).toBe("reactant");
    expect(choice.reason).toContain(`plugin ${oldPlugin}`);
    expect(choice.reason).toContain("PLUGIN_VERSION_MISMATCH api version 0.54 is not supported");
  });

  test("auto never throws, even when the probe does or the file is missing", async () => {
    const broken = plugin("broken/plugin.so", "throws");
    const choice = await selectEngine({
      engine: "auto",
      candidates: [
        { path: join(root, "missing.so"), source: "config", origin: "pjrt.plugin", exists: false },
        { path: broken, source: "python", origin: root, exists: true },
      ],
      probe,
    });
    expect(choice.engine).toBe("reactant");
    expect(choice.reason).toContain("PLUGIN_NOT_FOUND the file does not exist");
    expect(choice.reason).toContain("undefined symbol GetPjrtApi");
  });

  test("pjrt without any plugin is PLUGIN_NOT_FOUND", async () => {
    const error = await selectEngine({ engine: "pjrt", candidates: [], searched: ["/x/jax_plugins"], probe }).catch(
      (e) => e,
    );
    expect(error).toBeInstanceOf(XlaserveError);
    expect(error.code).toBe("PLUGIN_NOT_FOUND");
    expect(error.message).toContain("looked in /x/jax_plugins");
  });

  test("pjrt with a mismatched plugin throws the probe's error", async () => {
    const found = discoverPjrtPlugins({ pjrt: { plugin: configured } }, { env: {} });
    await expect(selectEngine({ engine: "pjrt", ...found, probe })).rejects.toMatchObject({
      code: "PLUGIN_VERSION_MISMATCH",
      message: expect.stringContaining("api version 0.60 is not supported"),
    });
  });

  test("pjrt with a good plugin picks it; reactant never probes", async () => {
    const found = discoverPjrtPlugins(noPjrt, { env: {}, sitePackages: [siteA] });
    expect((await selectEngine({ engine: "pjrt", ...found, probe })).engine).toBe("pjrt");
    let probed = false;
    const choice = await selectEngine({
      engine: "reactant",
      ...found,
      probe: (path) => {
        probed = true;
        return probe(path);
      },
    });
    expect(choice).toEqual({ engine: "reactant", reason: "engine=reactant in the configuration" });
    expect(probed).toBe(false);
  });
});
