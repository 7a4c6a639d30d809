import { join } from "node:path";

/**
 * A real S3-compatible server (s3rver, a dev dependency) in a child node process, with the
 * credentials it accepts (it checks request signatures against them).
 */
export async function startS3Server(dir: string, bucket: string) {
  const proc = Bun.spawn(["node", join(import.meta.dir, "s3-server.mjs"), "--dir", dir, "--bucket", bucket], {
    stdout: "pipe",
    stderr: "pipe",
  });
  const reader = proc.stdout.getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`s3rver did not start: ${await new Response(proc.stderr).text()}`);
    text += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  const env = {
    S3_ENDPOINT: `http://127.0.0.1:${Number(text.trim())}`,
    S3_ACCESS_KEY_ID: "S3RVER",
    S3_SECRET_ACCESS_KEY: "S3RVER",
    S3_REGION: "us-east-1",
  };
  return {
    env,
    async [Symbol.asyncDispose]() {
      proc.kill();
      await proc.exited;
    },
  };
}
