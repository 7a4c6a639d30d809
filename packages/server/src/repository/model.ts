import { t } from "elysia";

export const IndexRequest = t.Object(
  { ready: t.Optional(t.Boolean({ error: "ready must be true or false" })) },
  { additionalProperties: true, error: 'the index request must be a JSON object such as {"ready": true}' },
);

export const IndexEntry = t.Object({
  name: t.String(),
  version: t.String(),
  state: t.Union([t.Literal("READY"), t.Literal("LOADING"), t.Literal("UNLOADING"), t.Literal("UNAVAILABLE")]),
  reason: t.String(),
  extra: t.Optional(t.Record(t.String(), t.Unknown())),
});

export const IndexResponse = t.Array(IndexEntry);

export const LoadRequest = t.Object(
  { parameters: t.Optional(t.Record(t.String(), t.Unknown())) },
  { additionalProperties: true, error: "the load/unload request must be a JSON object" },
);
