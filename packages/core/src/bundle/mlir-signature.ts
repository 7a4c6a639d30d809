import { readPortableMainSignature } from "@xlaserve/stablehlo/portable-signature.ts";
import {
  type DeclaredSignature,
  type DeclaredType,
  SignatureSyntaxError,
  readMainSignature,
} from "@xlaserve/stablehlo/signature.ts";
import { dtypeFromMlir } from "../dtypes.ts";
import type { ModuleSignature, SignatureType } from "./types.ts";

export { SignatureSyntaxError };

/**
 * The @main signature of a StableHLO text module in core's dtypes, read by the program model's
 * header reader. Throws SignatureSyntaxError when the text has none or a type has no host dtype.
 */
export function parseMainSignature(text: string): ModuleSignature {
  return toModuleSignature(readMainSignature(text));
}

/**
 * The @main signature of a portable artifact (MLIR bytecode). Throws SignatureSyntaxError as
 * the text form does, or the program model's ModuleError (MODULE_INVALID with the offset and
 * what was expected) for an artifact that is truncated, corrupt or newer than the reader.
 */
export function portableMainSignature(bytes: Uint8Array, origin: string): ModuleSignature {
  return toModuleSignature(readPortableMainSignature(bytes, origin));
}

function toModuleSignature(declared: DeclaredSignature): ModuleSignature {
  return {
    args: declared.args.map((t, i) => toSignatureType(t, `argument ${i}`)),
    results: declared.results.map((t, i) => toSignatureType(t, `result ${i}`)),
  };
}

function toSignatureType(type: DeclaredType, what: string): SignatureType {
  const dtype = dtypeFromMlir(type.element);
  if (dtype) return { dtype, shape: type.shape };
  if (type.isTensor)
    throw new SignatureSyntaxError(`${what} has element type "${type.element}", which is not supported`);
  throw new SignatureSyntaxError(`${what} has type "${type.element}", which is not a supported tensor type`);
}

/** `tensor<1x64xf32>` style rendering for messages. */
export function formatSignatureType(type: SignatureType, mlirName: string): string {
  return `tensor<${[...type.shape.map((d) => (d === -1 ? "?" : String(d))), mlirName].join("x")}>`;
}
