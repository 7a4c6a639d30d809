import { afterAll, beforeAll, expect, test } from "bun:test";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { credentials } from "@grpc/grpc-js";
import { InferenceClient } from "../src/grpc/client.ts";
import { type GrpcHarness, startGrpcHarness } from "./support/grpc-harness.ts";

/** A self-signed certificate for 127.0.0.1 made by the openssl command line, or null without one. */
function selfSigned(dir: string): { cert: string; key: string } | null {
  try {
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=localhost",
        "-addext",
        "subjectAltName=IP:127.0.0.1,DNS:localhost",
        "-keyout",
        join(dir, "key.pem"),
        "-out",
        join(dir, "cert.pem"),
      ],
      { stdio: "pipe" },
    );
  } catch {
    return null;
  }
  return { cert: readFileSync(join(dir, "cert.pem"), "utf8"), key: readFileSync(join(dir, "key.pem"), "utf8") };
}

const dir = mkdtempSync(join(tmpdir(), "xlaserve-tls-"));
const pem = selfSigned(dir);
let h: GrpcHarness;
beforeAll(async () => {
  if (pem) h = await startGrpcHarness({ tls: pem });
});
afterAll(async () => {
  await h?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test.skipIf(pem === null)("TLS: a client trusting the certificate is served; a cleartext one is not", async () => {
  const tls = new InferenceClient(h.address, {
    credentials: credentials.createSsl(Buffer.from((pem as { cert: string }).cert)),
    // Node's TLS takes no IP address as the server name; the certificate names localhost too.
    channel: { "grpc.ssl_target_name_override": "localhost" },
  });
  try {
    expect((await tls.call("serverLive", {})).live).toBe(true);
    const meta = await tls.call("modelMetadata", { name: "affine" });
    expect(meta.name).toBe("affine");
  } finally {
    tls.close();
  }
  const clear = await h.client.call("serverLive", {}, { timeoutSeconds: 5 }).then(
    () => "served",
    (e) => e.code,
  );
  expect(clear).not.toBe("served");
});
