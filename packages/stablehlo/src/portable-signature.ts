import { formatType } from "./ir.ts";
import type { ValueType } from "./ir.ts";
import { readPortableArtifact } from "./portable.ts";
import { type DeclaredSignature, type DeclaredType, SignatureSyntaxError, declaredTypeOf } from "./signature.ts";

/**
 * The @main signature of a portable artifact, in the same form as the text header reader's.
 * The whole artifact is decoded, so a truncated or corrupt one fails here (MODULE_INVALID with
 * its offset), not later on the device.
 */
export function readPortableMainSignature(bytes: Uint8Array, origin: string): DeclaredSignature {
  const module = readPortableArtifact(bytes, origin);
  const main = module.funcs.find((f) => f.name === "main");
  if (!main) throw new SignatureSyntaxError("the artifact has no @main function");
  return { args: main.args.map((a) => declared(a.type)), results: main.resultTypes.map(declared) };
}

function declared(t: ValueType): DeclaredType {
  if (t.kind === "tensor") return { element: mlirElement(t.elem), shape: [...t.shape], isTensor: true };
  if (t.kind === "other" && t.text.startsWith("tensor<")) return declaredTypeOf(t.text);
  return { element: formatType(t), shape: [], isTensor: false };
}

function mlirElement(elem: string): string {
  return elem === "c64" ? "complex<f32>" : elem === "c128" ? "complex<f64>" : elem;
}
