/**
 * Uploads on the GPU by both host-buffer semantics: a request-sized tensor is staged by the plugin
 * during the call (no wait for done_with_host_buffer on the request path), a larger one read in
 * place until its transfer completes. Both arrive intact, and the host bytes may change the moment
 * upload() resolves.
 */
import { describe, expect, test } from "bun:test";
import type { HostTensor } from "@xlaserve/core";
import {
  HOST_SEMANTICS_ONLY_DURING_CALL,
  HOST_SEMANTICS_UNTIL_TRANSFER_COMPLETES,
  STAGED_UPLOAD_MAX_BYTES,
  uploadSemantics,
} from "../../packages/backend-pjrt/src/runtime/buffer.ts";
import { gpuBackend } from "./support/backend.ts";

const backend = await gpuBackend();

test("request-sized inputs are staged during the call, larger ones read until the transfer completes", () => {
  expect(uploadSemantics(256)).toBe(HOST_SEMANTICS_ONLY_DURING_CALL);
  expect(uploadSemantics(STAGED_UPLOAD_MAX_BYTES)).toBe(HOST_SEMANTICS_ONLY_DURING_CALL);
  expect(uploadSemantics(STAGED_UPLOAD_MAX_BYTES + 1)).toBe(HOST_SEMANTICS_UNTIL_TRANSFER_COMPLETES);
});

describe.skipIf(!backend)("uploads on the GPU", () => {
  test("a staged and an in-place upload both arrive intact, the host bytes free once upload() resolves", async () => {
    if (!backend) return;
    for (const elements of [64, STAGED_UPLOAD_MAX_BYTES / 4 + 1024]) {
      const data = new Float32Array(elements).map((_, i) => Math.sin(i));
      const expected = data.slice();
      const tensor: HostTensor = { dtype: "f32", shape: [elements], data };
      const buffer = await backend.upload(tensor);
      data.fill(-1);
      const back = await backend.download(buffer);
      expect(Buffer.from((back.data as Float32Array).buffer).equals(Buffer.from(expected.buffer))).toBe(true);
      buffer.dispose();
    }
  });
});
