export { gemm, blasStatus, setForceFallbackGemm, setBlasThreads, type BlasStatus } from "./gemm.ts";
export type { GemmCall } from "./gemm-call.ts";
export { fallbackGemm } from "./fallback-gemm.ts";
export { candidatePaths, loadOpenBlas, wantedThreads } from "./library.ts";
export { type GemmRunner, type GemmShape, planGemm } from "./gemm-plan.ts";
export { setSimdGemmDisabled, simdGemmAvailable } from "./simd-gemm.ts";
