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

const ConfigTensor = t.Object({ name: t.String(), data_type: t.String(), dims: t.Array(t.Integer()) });

export const ModelConfig = t.Object(
  {
    name: t.String(),
    platform: t.String(),
    backend: t.String(),
    max_batch_size: t.Integer(),
    input: t.Array(ConfigTensor),
    output: t.Array(ConfigTensor),
    version_policy: t.Object({ specific: t.Object({ versions: t.Array(t.String()) }) }),
  },
  { description: "Triton model configuration (the subset xlaserve can state)" },
);
