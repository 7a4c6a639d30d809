import { existsSync, readdirSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";

/**
 * Finds PJRT plugin candidates, most explicit first: the path in the configuration, then
 * XLASERVE_PJRT_PLUGIN, then the `jax_plugins/<name>/*.so` folders that JAX's plugin packages
 * (jax-cuda13-pjrt and friends) install into Python site-packages. An explicit path is returned
 * even when the file is missing, so the selector can say so instead of silently scanning on.
 */

export type PluginSource = "config" | "env" | "python";

export interface PluginCandidate {
  readonly path: string;
  readonly source: PluginSource;
  /** Where exactly it came from ("pjrt.plugin", "XLASERVE_PJRT_PLUGIN", the site-packages dir). */
  readonly origin: string;
  readonly exists: boolean;
}

export interface PluginDiscovery {
  readonly candidates: readonly PluginCandidate[];
  /** Every place looked at, for the "no plugin found (looked in ...)" reason. */
  readonly searched: readonly string[];
}

export interface DiscoverOptions {
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Site-packages directories to scan instead of the usual roots (tests, unusual layouts). */
  readonly sitePackages?: readonly string[];
  /** Ask `python3` for its site-packages (default true; skipped when sitePackages is given). */
  readonly askPython?: boolean;
}

export function discoverPjrtPlugins(
  config: { readonly pjrt: { readonly plugin?: string } },
  options: DiscoverOptions = {},
): PluginDiscovery {
  const env = options.env ?? process.env;
  const configured = config.pjrt.plugin;
  const fromEnv = env.XLASERVE_PJRT_PLUGIN || undefined;
  // The config loader folds XLASERVE_PJRT_PLUGIN into pjrt.plugin; credit the variable then.
  if (configured && configured !== fromEnv) {
    return explicit(configured, "config", "pjrt.plugin");
  }
  if (fromEnv) return explicit(fromEnv, "env", "XLASERVE_PJRT_PLUGIN");

  const roots = options.sitePackages ?? defaultSitePackages(env, options.askPython ?? true);
  const candidates: PluginCandidate[] = [];
  const seen = new Set<string>();
  for (const root of roots) {
    for (const path of pluginsUnder(join(root, "jax_plugins"))) {
      if (seen.has(path)) continue;
      seen.add(path);
      candidates.push({ path, source: "python", origin: root, exists: true });
    }
  }
  return { candidates, searched: roots.map((r) => join(r, "jax_plugins")) };
}

function explicit(path: string, source: PluginSource, origin: string): PluginDiscovery {
  const absolute = resolve(path);
  return {
    candidates: [{ path: absolute, source, origin, exists: isFile(absolute) }],
    searched: [`${absolute} (${origin})`],
  };
}

/** `jax_plugins/<plugin>/<lib>.so`, sorted so the choice does not depend on directory order. */
function pluginsUnder(dir: string): string[] {
  const found: string[] = [];
  for (const plugin of listDir(dir).sort()) {
    const pluginDir = join(dir, plugin);
    for (const file of listDir(pluginDir).sort()) {
      if (file.endsWith(".so") && isFile(join(pluginDir, file))) found.push(join(pluginDir, file));
    }
  }
  return found;
}

/** Usual Python site-packages roots, existing ones only, without duplicates. */
export function defaultSitePackages(env: Readonly<Record<string, string | undefined>>, askPython: boolean): string[] {
  const prefixes = ["/usr/lib", "/usr/local/lib", join(homedir(), ".local", "lib")];
  if (env.VIRTUAL_ENV) prefixes.push(join(env.VIRTUAL_ENV, "lib"));
  for (const opt of listDir("/opt")) prefixes.push(join("/opt", opt, ".venv", "lib"));
  const roots: string[] = [];
  for (const prefix of prefixes) {
    for (const python of listDir(prefix).filter((d) => /^python3(\.\d+)?$/.test(d))) {
      for (const kind of ["site-packages", "dist-packages"]) roots.push(join(prefix, python, kind));
    }
  }
  if (askPython) roots.push(...pythonSitePackages());
  return [...new Set(roots)].filter(isDirectory);
}

/** What the installed python3 itself considers its package directories (2 s at most). */
function pythonSitePackages(): string[] {
  const script =
    "import json,site,sys\n" +
    "paths=list(getattr(site,'getsitepackages',lambda:[])())+[site.getusersitepackages()]+sys.path\n" +
    "print(json.dumps([p for p in paths if p]))";
  try {
    const result = Bun.spawnSync(["python3", "-c", script], { timeout: 2000, stdout: "pipe", stderr: "ignore" });
    if (result.exitCode !== 0) return [];
    const paths: unknown = JSON.parse(result.stdout.toString());
    return Array.isArray(paths) ? paths.filter((p): p is string => typeof p === "string") : [];
  } catch {
    return []; // no python3 on PATH: nothing to add
  }
}

function listDir(dir: string): string[] {
  try {
    return existsSync(dir) ? readdirSync(dir) : [];
  } catch {
    return [];
  }
}

function isFile(path: string): boolean {
  return statSync(path, { throwIfNoEntry: false })?.isFile() ?? false;
}

function isDirectory(path: string): boolean {
  return statSync(path, { throwIfNoEntry: false })?.isDirectory() ?? false;
}
