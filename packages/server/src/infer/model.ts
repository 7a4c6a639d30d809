import { type Static, Type as T } from "@sinclair/typebox";
import { t } from "elysia";

/**
 * KServe v2 / Open Inference Protocol request and response envelopes. Elysia checks the envelope
 * (names, shapes, datatypes as strings, parameter objects); tensor `data` stays `unknown` here
 * because the codec decodes and checks it element by element in the same pass that fills the
 * typed array, instead of a schema walking every element once more. Plain typebox (not Elysia's
 * `t`, whose numbers also accept numeric strings) so the schema is exactly the protocol's.
 */

/** Parameter values are bool, number or string in the protocol. */
export const Parameters = T.Record(T.String(), T.Union([T.String(), T.Number(), T.Boolean(), T.Null()]), {
  error: "parameters must be an object of string, number or boolean values",
});

export const RequestInput = T.Object(
  {
    name: T.String({ minLength: 1, error: "every input needs a non-empty string name" }),
    shape: T.Array(T.Integer({ minimum: 0, error: "shape must be a list of non-negative integers" }), {
      error: "shape must be a list of non-negative integers",
    }),
    datatype: T.String({ minLength: 1, error: "datatype must be a KServe datatype name such as FP32" }),
    parameters: T.Optional(Parameters),
    data: T.Optional(T.Unknown({ description: "flat or nested row-major elements (absent with binary_data_size)" })),
  },
  { additionalProperties: true },
);

export const RequestOutput = T.Object(
  {
    name: T.String({ minLength: 1, error: "every requested output needs a non-empty string name" }),
    parameters: T.Optional(Parameters),
  },
  { additionalProperties: true },
);

export const InferRequestBody = T.Object(
  {
    id: T.Optional(T.String({ error: "id must be a string" })),
    parameters: T.Optional(Parameters),
    inputs: T.Array(RequestInput, { minItems: 1, error: "inputs must be a non-empty list of tensors" }),
    outputs: T.Optional(T.Array(RequestOutput, { error: "outputs must be a list of {name, parameters}" })),
  },
  { additionalProperties: true, error: "the request body must be a JSON object with an inputs list" },
);
export type InferRequestBody = Static<typeof InferRequestBody>;

export const ResponseOutput = T.Object({
  name: T.String(),
  datatype: T.String(),
  shape: T.Array(T.Integer()),
  parameters: T.Optional(Parameters),
  data: T.Optional(T.Array(T.Union([T.Number(), T.Boolean()]))),
});

export const InferResponseBody = T.Object({
  model_name: T.String(),
  model_version: T.Optional(T.String()),
  id: T.Optional(T.String()),
  parameters: T.Optional(Parameters),
  outputs: T.Array(ResponseOutput),
});

export const ErrorBody = T.Object({ error: T.String() });

export const ModelParams = t.Object({ model: t.String() });
export const ModelVersionParams = t.Object({ model: t.String(), version: t.String() });
