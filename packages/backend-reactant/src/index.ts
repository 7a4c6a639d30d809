export { createReactantBackend, ENGINE_VERSION, type ReactantBackendOptions } from "./backend.ts";
export * from "./array.ts";
export type * from "@xlaserve/stablehlo";
export { parseModule } from "@xlaserve/stablehlo";
export { readModule } from "./read-module.ts";
export { Program, CompiledFunction, type OpTime, type ProgramOptions } from "./plan/program.ts";
export { Arena } from "./plan/arena.ts";
export { PLAN_FORMAT_VERSION, serializeModule, deserializeModule } from "./plan/serialize.ts";
export { runConformanceText, familyOf, type CaseResult } from "./conformance/run-file.ts";
