import type { AbstractBackend, BackendIdentity, CompileOptions, Executable, ModuleFormat } from "@xlaserve/core";

/** The parts of a core `BundleModule` the cache needs (a full BundleModule fits). */
export interface CacheModule {
  readonly file: string;
  /** sha256 (hex) of the module file's bytes. */
  readonly sha256: string;
  readonly format: ModuleFormat;
  read(): Promise<Uint8Array>;
}

/** The parts of a core `Bundle` the cache needs (a full Bundle fits). */
export interface CacheBundle {
  readonly name: string;
  /** The bundle directory; its `.cache/` holds the entries. */
  readonly dir: string;
}

export interface BundleWithModules extends CacheBundle {
  readonly modules: readonly CacheModule[];
}

export type CacheOutcome = "hit" | "miss" | "recompiled";

export interface GetOrCompileArgs {
  readonly bundle: CacheBundle;
  readonly module: CacheModule;
  readonly backend: AbstractBackend;
  readonly options: CompileOptions;
  /**
   * Compiles in place of `backend.compile` (e.g. in a crash-isolated child process). Must
   * compile this module with these options on this backend: the result is stored under their key.
   */
  readonly compile?: () => Promise<Executable>;
  /** Anything else the compiled program depends on that options and identity do not cover. */
  readonly keyExtra?: string;
}

export interface GetOrCompileResult {
  /** Owned by the caller. */
  readonly executable: Executable;
  readonly outcome: CacheOutcome;
  /** Time spent compiling in this call; null on a hit. */
  readonly compileMs: number | null;
  /** Time spent reading, checking and deserializing the entry; null when compiled. */
  readonly loadMs: number | null;
  readonly entryPath: string;
  readonly partition: string;
  /** Size of the entry file (0 if it could not be written). */
  readonly sizeBytes: number;
  /** For "recompiled": why the stored entry was rejected. */
  readonly rejected?: string;
  /**
   * Where the program came from: this bundle's `.cache/` ("local"), the fleet's shared store
   * ("fleet", now also stored locally) or a compile here ("compile").
   */
  readonly from?: "local" | "fleet" | "compile";
}

/** Everything the cache derives from one getOrCompile call. */
export interface EntryKey {
  readonly identity: BackendIdentity;
  readonly partition: string;
  readonly optionsHash: string;
  readonly entry: string;
  readonly path: string;
}
