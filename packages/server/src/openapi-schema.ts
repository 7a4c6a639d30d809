import type { TSchema } from "@sinclair/typebox";
import type { DocumentDecoration } from "elysia";

type RequestBody = NonNullable<DocumentDecoration["requestBody"]>;

/**
 * An OpenAPI request body documented by typebox schemas. Routes whose bodies the codec reads
 * itself (binary infer bodies, optional admin bodies) still show their schema in /openapi.json.
 * A typebox schema is JSON Schema, hence the cast to OpenAPI's schema object type.
 */
export function documentedBody(
  description: string,
  required: boolean,
  content: Record<string, TSchema | { type: string; format?: string }>,
): RequestBody {
  const media: Record<string, { schema: unknown }> = {};
  for (const [type, schema] of Object.entries(content)) media[type] = { schema };
  return { description, required, content: media } as unknown as RequestBody;
}
