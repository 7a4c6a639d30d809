import { t } from "elysia";

export const LiveBody = t.Object({ live: t.Boolean() });
export const ReadyBody = t.Object({
  ready: t.Boolean(),
  error: t.Optional(t.String({ description: "why the worker is not ready, naming the models" })),
  not_ready: t.Optional(t.Array(t.Object({ name: t.String(), state: t.String(), reason: t.String() }))),
});
