export * from "./elements.ts";
export * from "./errors.ts";
export type * from "./ir.ts";
export { formatType, isTensorType } from "./ir.ts";
export { parseModule } from "./parser/parser.ts";
export { type DeclaredSignature, type DeclaredType, SignatureSyntaxError, readMainSignature } from "./signature.ts";
export {
  NEWEST_STABLEHLO,
  type PortableInfo,
  type ReadOptions,
  isBytecode,
  portableInfo,
  readPortableArtifact,
} from "./portable.ts";
export { readPortableMainSignature } from "./portable-signature.ts";
export { printModule } from "./printer.ts";
