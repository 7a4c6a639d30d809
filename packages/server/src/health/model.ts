import { t } from "elysia";

export const LiveBody = t.Object({ live: t.Boolean() });
export const ReadyBody = t.Object({ ready: t.Boolean(), error: t.Optional(t.String()) });
