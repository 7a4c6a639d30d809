import type { TSchema } from "@sinclair/typebox";
import { TypeCompiler, type TypeCheck } from "@sinclair/typebox/compiler";
import type { Static } from "elysia";
import { badRequest } from "./http-error.ts";
import { readBody } from "./read-body.ts";

const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * An optional JSON body checked against a typebox schema, read within the same body limit as an
 * infer request. Triton's clients send these admin calls with an empty body as often as with
 * "{}", which Elysia's JSON parser would reject.
 */
export function optionalJsonBody<S extends TSchema>(
  schema: S,
  maxBytes: number,
): (request: Request) => Promise<Static<S> | undefined> {
  const check: TypeCheck<S> = TypeCompiler.Compile(schema);
  return async (request) => {
    let text: string;
    try {
      text = utf8.decode(await readBody(request, maxBytes)).trim();
    } catch (error) {
      if (error instanceof TypeError) throw badRequest("request body is not valid UTF-8");
      throw error;
    }
    if (text === "") return undefined;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      throw badRequest(`request body is not valid JSON: ${(error as Error).message}`);
    }
    if (!check.Check(value)) {
      const first = check.Errors(value).First();
      const custom = (first?.schema as { error?: unknown } | undefined)?.error;
      throw badRequest(
        `request body${first?.path ? ` at ${first.path}` : ""}: ${typeof custom === "string" ? custom : first?.message}`,
      );
    }
    return value as Static<S>;
  };
}
