import { expect, test } from "bun:test";
import {
  Metadata,
  Server,
  ServerCredentials,
  type ServerUnaryCall,
  credentials,
  makeGenericClientConstructor,
} from "@grpc/grpc-js";
import { UnaryCancelled } from "../src/grpc/handlers/infer.ts";
import { RAW_MODEL_INFER_DEFINITION as DEFINITION } from "../src/grpc/raw-client.ts";

type Stub = {
  ModelInfer(b: Buffer, m: Metadata, cb: (e: unknown) => void): { cancel(): void };
  close(): void;
};

/** A ModelInfer server that never answers and hands each call's cancel flag out. */
async function holdingServer(): Promise<{ server: Server; port: number; flags: UnaryCancelled[] }> {
  const flags: UnaryCancelled[] = [];
  const server = new Server();
  server.addService(DEFINITION, {
    ModelInfer: (call: ServerUnaryCall<Buffer, Buffer>) => void flags.push(new UnaryCancelled(call)),
  });
  const port = await new Promise<number>((ok, fail) =>
    server.bindAsync("127.0.0.1:0", ServerCredentials.createInsecure(), (e, p) => (e ? fail(e) : ok(p))),
  );
  return { server, port, flags };
}

async function until(ok: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !ok(); i++) await Bun.sleep(10);
}

test("a unary call's cancel flag turns true when the client goes away, and not before", async () => {
  const { server, port, flags } = await holdingServer();
  const Client = makeGenericClientConstructor(DEFINITION, "Holding");
  const client = new Client(`127.0.0.1:${port}`, credentials.createInsecure()) as unknown as Stub;
  try {
    const call = client.ModelInfer(Buffer.of(1, 2, 3), new Metadata(), () => {});
    await until(() => flags.length === 1);
    const flag = flags[0] as UnaryCancelled;
    await Bun.sleep(50);
    expect(flag.aborted).toBe(false);
    call.cancel();
    await until(() => flag.aborted);
    expect(flag.aborted).toBe(true);
  } finally {
    client.close();
    server.forceShutdown();
  }
});
