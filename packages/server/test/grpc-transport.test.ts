/**
 * The gRPC transport's framing and status, under a grpc-js client: a framed answer goes out as
 * the very buffer the encoder wrote (no copy), messages split across DATA frames are gathered,
 * grpc-message carries non-ASCII text, unknown methods are UNIMPLEMENTED; and the pure parts
 * (grpc-timeout, the message reader) on their own.
 */
import { expect, test } from "bun:test";
import { Metadata, type ServiceError, credentials, makeGenericClientConstructor, status } from "@grpc/grpc-js";
import { RAW_MODEL_INFER_DEFINITION as DEFINITION } from "../src/grpc/raw-client.ts";
import type { UnaryCall, UnaryCallback } from "../src/grpc/transport/calls.ts";
import { type Framed, MessageReader, OversizeMessage, type ReadMessage, frame } from "../src/grpc/transport/framing.ts";
import { H2GrpcServer } from "../src/grpc/transport/h2-server.ts";
import { encodeGrpcMessage, parseTimeout } from "../src/grpc/transport/headers.ts";

type Stub = {
  ModelInfer(b: Buffer, m: Metadata, cb: (e: ServiceError | null, r?: Buffer) => void): void;
  Other(b: Buffer, m: Metadata, cb: (e: ServiceError | null, r?: Buffer) => void): void;
  close(): void;
};

async function serve(handler: (call: UnaryCall, callback: UnaryCallback) => void, max = 1 << 24) {
  const server = new H2GrpcServer(
    new Map([
      [DEFINITION.ModelInfer.path, { kind: "unary" as const, handler, serialize: (v: unknown) => v as Uint8Array }],
    ]),
    { maxMessageBytes: max },
  );
  const port = await server.listen("127.0.0.1", 0);
  const Client = makeGenericClientConstructor(
    { ...DEFINITION, Other: { ...DEFINITION.ModelInfer, path: "/nope.Service/Other" } },
    "T",
  );
  const client = new Client(`127.0.0.1:${port}`, credentials.createInsecure(), {
    "grpc.max_receive_message_length": -1,
    "grpc.max_send_message_length": -1,
  }) as unknown as Stub;
  const call = (name: "ModelInfer" | "Other", body: Buffer) =>
    new Promise<{ error: ServiceError | null; bytes?: Buffer }>((done) =>
      client[name](body, new Metadata(), (error, bytes) => done({ error, bytes })),
    );
  return {
    call,
    port,
    close: async () => {
      client.close();
      await server.stop(true, 0);
    },
  };
}

test("a framed answer is written as the encoder's own buffer, not a copy of it", async () => {
  let written: unknown;
  let framed: Framed | undefined;
  const s = await serve((call, callback) => {
    const end = call.stream.end.bind(call.stream);
    call.stream.end = ((chunk: unknown) => {
      written = chunk;
      return end(chunk as Buffer);
    }) as typeof call.stream.end;
    framed = frame(Buffer.from("the answer"));
    callback(null, framed);
  });
  try {
    const { error, bytes } = await s.call("ModelInfer", Buffer.from("q"));
    expect(error).toBeNull();
    expect(bytes?.toString()).toBe("the answer");
    expect(written).toBe((framed as Framed).bytes);
  } finally {
    await s.close();
  }
});

test("a 3 MiB request (many DATA frames) arrives whole; one over the cap is RESOURCE_EXHAUSTED", async () => {
  const s = await serve((call, callback) => callback(null, Buffer.from(String(call.request.byteLength))), 3 << 20);
  try {
    const big = Buffer.alloc(3 << 20, 7);
    expect((await s.call("ModelInfer", big)).bytes?.toString()).toBe(String(3 << 20));
    const over = await s.call("ModelInfer", Buffer.alloc((3 << 20) + 1));
    expect(over.error?.code).toBe(status.RESOURCE_EXHAUSTED);
    expect(over.error?.details).toBe(
      `the request message is ${(3 << 20) + 1} bytes, over this server's limit of ${3 << 20} bytes`,
    );
    expect((await s.call("ModelInfer", Buffer.from("x"))).bytes?.toString()).toBe("1");
  } finally {
    await s.close();
  }
});

test("an error's message reaches the client as written, non-ASCII and % included; an unknown method is UNIMPLEMENTED", async () => {
  const s = await serve((_call, callback) => callback({ code: status.NOT_FOUND, details: "modèle « x » 100% absent" }));
  try {
    const e = (await s.call("ModelInfer", Buffer.from("q"))).error;
    expect([e?.code, e?.details]).toEqual([status.NOT_FOUND, "modèle « x » 100% absent"]);
    const other = (await s.call("Other", Buffer.from("q"))).error;
    expect([other?.code, other?.details]).toEqual([
      status.UNIMPLEMENTED,
      "no method /nope.Service/Other on this server",
    ]);
  } finally {
    await s.close();
  }
});

test("bytes that are no HTTP/2, and an HTTP/1.1 request, leave the server serving", async () => {
  const s = await serve((call, callback) => callback(null, call.request));
  try {
    for (const junk of [
      "hello there\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: x\r\n\r\n",
      "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00",
    ]) {
      const socket = await Bun.connect({
        hostname: "127.0.0.1",
        port: s.port,
        socket: { data() {}, error() {}, close() {} },
      });
      socket.write(junk);
      await Bun.sleep(50);
      socket.end();
    }
    expect((await s.call("ModelInfer", Buffer.from("still here"))).bytes?.toString()).toBe("still here");
  } finally {
    await s.close();
  }
});

test("grpc-timeout values", () => {
  expect(parseTimeout("5S")).toBe(5000);
  expect(parseTimeout("250m")).toBe(250);
  expect(parseTimeout("1500u")).toBe(1.5);
  expect(parseTimeout("2M")).toBe(120_000);
  expect(parseTimeout("1H")).toBe(3_600_000);
  expect(parseTimeout("100n")).toBeCloseTo(1e-4);
  for (const bad of ["", "S", "5", "5s", "-5S", "123456789S", "1.5S"]) expect(parseTimeout(bad)).toBeUndefined();
  expect(encodeGrpcMessage("plain text")).toBe("plain text");
  expect(encodeGrpcMessage("50% é\n")).toBe("50%25 %C3%A9%0A");
});

test("the message reader: whole messages as views, split ones gathered, the cap before any byte is kept", () => {
  const a = frame(Buffer.from("first")).bytes;
  const b = frame(Buffer.from("second message")).bytes;
  const stream = Buffer.concat([a, b]);
  for (let cut = 0; cut <= stream.byteLength; cut++) {
    const reader = new MessageReader(100);
    const out: ReadMessage[] = [];
    reader.push(stream.subarray(0, cut), out);
    reader.push(stream.subarray(cut), out);
    expect(out.map((m) => m.bytes.toString())).toEqual(["first", "second message"]);
    expect(reader.partial).toBe(false);
  }
  const whole: ReadMessage[] = [];
  new MessageReader(100).push(stream, whole);
  expect((whole[0] as ReadMessage).bytes.buffer).toBe(stream.buffer);
  const half = new MessageReader(100);
  half.push(a.subarray(0, 7), []);
  expect(half.partial).toBe(true);
  expect(() => new MessageReader(4).push(a, [])).toThrow(OversizeMessage);
});
