export * from "./dtypes.ts";
export * from "./float16.ts";
export * from "./errors.ts";
export * from "./tensor.ts";
export * from "./backend.ts";
