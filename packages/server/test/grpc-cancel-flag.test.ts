/**
 * The gRPC transport's cancellation, seen from a grpc-js client: a held call's cancel flag stays
 * false until the client cancels (then turns true without any listener), a deadline that passes
 * unanswered is DEADLINE_EXCEEDED and cancels the call, and a stream's "cancelled" fires when the
 * client resets it.
 */
import { expect, test } from "bun:test";
import { Metadata, type ServiceError, credentials, makeGenericClientConstructor, status } from "@grpc/grpc-js";
import { CallCancelled } from "../src/grpc/handlers/infer.ts";
import { RAW_MODEL_INFER_DEFINITION as DEFINITION } from "../src/grpc/raw-client.ts";
import type { StreamCall, UnaryCall } from "../src/grpc/transport/calls.ts";
import { H2GrpcServer } from "../src/grpc/transport/h2-server.ts";

const STREAM_PATH = "/test.Holding/Stream";
const STREAM_DEFINITION = {
  ...DEFINITION,
  Stream: { ...DEFINITION.ModelInfer, path: STREAM_PATH, requestStream: true, responseStream: true },
};

type Stub = {
  ModelInfer(
    b: Buffer,
    m: Metadata,
    o: { deadline?: number },
    cb: (e: ServiceError | null) => void,
  ): { cancel(): void };
  Stream(): { write(b: Buffer): void; cancel(): void; on(e: string, f: (...a: unknown[]) => void): void };
  close(): void;
};

/** A server that never answers and hands each call out. */
async function holdingServer(): Promise<{
  server: H2GrpcServer;
  port: number;
  calls: UnaryCall[];
  streams: StreamCall[];
}> {
  const calls: UnaryCall[] = [];
  const streams: StreamCall[] = [];
  const server = new H2GrpcServer(
    new Map([
      [
        DEFINITION.ModelInfer.path,
        {
          kind: "unary" as const,
          handler: (c: UnaryCall) => void calls.push(c),
          serialize: (v: unknown) => v as Uint8Array,
        },
      ],
      [STREAM_PATH, { kind: "stream" as const, handler: (c: StreamCall) => void streams.push(c) }],
    ]),
    { maxMessageBytes: 1 << 20 },
  );
  return { server, port: await server.listen("127.0.0.1", 0), calls, streams };
}

async function until(ok: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !ok(); i++) await Bun.sleep(10);
}

function clientOf(port: number): Stub {
  const Client = makeGenericClientConstructor(STREAM_DEFINITION, "Holding");
  return new Client(`127.0.0.1:${port}`, credentials.createInsecure()) as unknown as Stub;
}

test("a unary call's cancel flag turns true when the client goes away, and not before", async () => {
  const { server, port, calls } = await holdingServer();
  const client = clientOf(port);
  try {
    const call = client.ModelInfer(Buffer.of(1, 2, 3), new Metadata(), {}, () => {});
    await until(() => calls.length === 1);
    const held = calls[0] as UnaryCall;
    expect([...held.request]).toEqual([1, 2, 3]);
    const flag = new CallCancelled(held);
    await Bun.sleep(50);
    expect(flag.aborted).toBe(false);
    expect(server.inFlight).toBe(1);
    call.cancel();
    await until(() => flag.aborted);
    expect(flag.aborted).toBe(true);
  } finally {
    client.close();
    await server.stop(true, 0);
  }
});

test("a deadline that passes unanswered is DEADLINE_EXCEEDED and cancels the call", async () => {
  const { server, port, calls } = await holdingServer();
  const client = clientOf(port);
  try {
    const before = performance.now();
    const answer = new Promise<ServiceError | null>((done) =>
      client.ModelInfer(Buffer.of(1), new Metadata(), { deadline: Date.now() + 300 }, done),
    );
    await until(() => calls.length === 1);
    const held = calls[0] as UnaryCall;
    expect(held.deadline).toBeGreaterThan(before + 200);
    expect(held.deadline).toBeLessThan(before + 400);
    expect((await answer)?.code).toBe(status.DEADLINE_EXCEEDED);
    await until(() => held.cancelled);
    expect(held.cancelled).toBe(true);
    expect(server.inFlight).toBe(0);
  } finally {
    client.close();
    await server.stop(true, 0);
  }
});

test("a stream's cancelled event fires when the client resets it", async () => {
  const { server, port, streams } = await holdingServer();
  const client = clientOf(port);
  try {
    const stream = client.Stream();
    stream.on("error", () => {});
    stream.write(Buffer.of(9));
    await until(() => streams.length === 1);
    const held = streams[0] as StreamCall;
    let cancelled = false;
    held.on("cancelled", () => {
      cancelled = true;
    });
    expect(held.cancelled).toBe(false);
    stream.cancel();
    await until(() => cancelled);
    expect(cancelled).toBe(true);
    expect(held.cancelled).toBe(true);
    expect(server.inFlight).toBe(0);
  } finally {
    client.close();
    await server.stop(true, 0);
  }
});
