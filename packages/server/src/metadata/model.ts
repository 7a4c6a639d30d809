import { t } from "elysia";

export const ServerMetadata = t.Object({
  name: t.String(),
  version: t.String(),
  extensions: t.Array(t.String()),
  xlaserve: t.Record(t.String(), t.Unknown(), { description: "engine (and why), PJRT plugin, device" }),
});

export const TensorMetadata = t.Object({
  name: t.String(),
  datatype: t.String({ description: "KServe v2 datatype name" }),
  shape: t.Array(t.Integer(), { description: "row-major; -1 for the batch axis and variable axes" }),
});

export const ModelMetadata = t.Object({
  name: t.String(),
  versions: t.Array(t.String()),
  platform: t.String(),
  inputs: t.Array(TensorMetadata),
  outputs: t.Array(TensorMetadata),
  xlaserve: t.Record(t.String(), t.Unknown(), {
    description: "compiled batch sizes, memory figures, residency, cache state",
  }),
});

export const ModelReady = t.Object({ name: t.String(), ready: t.Boolean(), error: t.Optional(t.String()) });
