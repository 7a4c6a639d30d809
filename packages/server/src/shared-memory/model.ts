import { t } from "elysia";

export const RegisterRequest = t.Object(
  {
    key: t.String({ minLength: 1, error: "key must be the shared-memory object's name, such as /my_region" }),
    offset: t.Optional(t.Integer({ minimum: 0, error: "offset must be a non-negative integer" })),
    byte_size: t.Integer({ minimum: 1, error: "byte_size must be a positive integer" }),
  },
  { additionalProperties: true, error: 'the register request must be a JSON object {"key", "offset", "byte_size"}' },
);

export const RegionStatusBody = t.Object({
  name: t.String(),
  key: t.String(),
  offset: t.Integer(),
  byte_size: t.Integer(),
});

export const StatusResponse = t.Array(RegionStatusBody);

export const RegionParams = t.Object({ name: t.String() });
