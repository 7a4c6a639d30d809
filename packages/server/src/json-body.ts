import type { TSchema } from "@sinclair/typebox";
import { TypeCompiler, type TypeCheck } from "@sinclair/typebox/compiler";
import type { Static } from "elysia";
import { badRequest } from "./http-error.ts";

/**
 * An optional JSON body checked against a typebox schema. Triton's clients send these admin
 * calls with an empty body as often as with "{}", which Elysia's JSON parser would reject.
 */
export function optionalJsonBody<S extends TSchema>(schema: S): (request: Request) => Promise<Static<S> | undefined> {
  const check: TypeCheck<S> = TypeCompiler.Compile(schema);
  return async (request) => {
    const text = (await request.text()).trim();
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
