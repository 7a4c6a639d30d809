#!/usr/bin/env node
// Regenerates packages/server/src/grpc/gen from packages/server/proto with buf and protoc-gen-es
// (both npm dev dependencies, so no protoc install is needed). The generated code is committed:
// `npm start` and `npm test` need no code generation step, and packages/server/test/protos.test.ts
// fails when the committed code no longer matches the .proto files.
//   node scripts/gen-protos.mjs [--out DIR]   (default: the committed location)
import { execFileSync } from "node:child_process";
import { join } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const server = join(root, "packages", "server");
const args = process.argv.slice(2);
const outAt = args.indexOf("--out");
const bin = join(root, "node_modules", ".bin");
const env = { ...process.env, PATH: `${bin}:${process.env.PATH ?? ""}` };
const template = outAt >= 0 ? templateFor(args[outAt + 1]) : join(server, "buf.gen.yaml");
execFileSync(join(bin, "buf"), ["generate", "--template", template], { cwd: server, env, stdio: "inherit" });

function templateFor(out) {
  if (!out) throw new Error("--out needs a directory");
  return JSON.stringify({
    version: "v2",
    inputs: [{ directory: "proto" }],
    plugins: [{ local: "protoc-gen-es", out, opt: ["target=ts", "import_extension=ts"] }],
  });
}
