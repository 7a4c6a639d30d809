import { TypeCompiler } from "@sinclair/typebox/compiler";
import { badRequest } from "../http-error.ts";
import { InferRequestBody } from "./model.ts";

/**
 * The infer route's typebox schema, compiled once and run by the codec (not by Elysia's body
 * hook) because the JSON header is only known after the binary split, and so that a failure
 * names the tensor it is about.
 */
const check = TypeCompiler.Compile(InferRequestBody);

export function checkEnvelope(header: unknown): InferRequestBody {
  if (check.Check(header)) return header;
  const first = check.Errors(header).First();
  if (!first) throw badRequest("the request does not match the KServe v2 inference request schema");
  const where = locate(header, first.path);
  const custom = (first.schema as { error?: unknown }).error;
  const why = typeof custom === "string" ? custom : `${first.message}`;
  throw badRequest(`${where}: ${why}`);
}

/** Turns a JSON pointer such as /inputs/1/shape/0 into `input "b" (inputs[1]) shape[0]`. */
function locate(header: unknown, path: string): string {
  const parts = path.split("/").slice(1);
  if (parts.length === 0) return "request body";
  const [list, index, ...rest] = parts;
  if ((list === "inputs" || list === "outputs") && index !== undefined && /^\d+$/.test(index)) {
    const item = (header as Record<string, unknown[]>)[list]?.[Number(index)] as { name?: unknown } | undefined;
    const kind = list === "inputs" ? "input" : "requested output";
    const name = typeof item?.name === "string" ? `${kind} "${item.name}" (${list}[${index}])` : `${list}[${index}]`;
    return rest.length ? `${name} ${pointerToField(rest)}` : name;
  }
  return `request ${pointerToField(parts)}`;
}

function pointerToField(parts: string[]): string {
  return parts.map((p, i) => (/^\d+$/.test(p) ? `[${p}]` : i === 0 ? p : `.${p}`)).join("");
}
