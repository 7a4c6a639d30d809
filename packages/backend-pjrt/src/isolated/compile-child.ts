/**
 * Child process of `compileInChild`: compiles one module with the given plugin and writes the
 * serialized executable to a file. argv: <job.json>. The job names the plugin, the client
 * options, the module file and format, the compile-options file and the output file. On a typed
 * error it prints {"error": ...} and exits 2; if XLA aborts, the parent sees the signal.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { asXlaserveError } from "@xlaserve/core";
import { PjrtApi } from "../api/pjrt-api.ts";
import { PjrtClient } from "../runtime/client.ts";
import { compileModule } from "../runtime/executable.ts";
import type { NamedOption } from "../runtime/named-values.ts";
import { initializePlugin } from "../runtime/plugin.ts";

interface Job {
  pluginPath: string;
  clientOptions: NamedOption[];
  modulePath: string;
  format: "text" | "bytecode";
  origin?: string;
  optionsPath: string;
  outputPath: string;
}

try {
  const jobPath = process.argv[2];
  if (!jobPath) throw new Error("usage: compile-child.ts <job.json>");
  const job = JSON.parse(readFileSync(jobPath, "utf8")) as Job;
  const api = PjrtApi.open(job.pluginPath);
  initializePlugin(api);
  const client = PjrtClient.create(api, job.clientOptions);
  const started = performance.now();
  const executable = compileModule(
    client,
    { bytes: new Uint8Array(readFileSync(job.modulePath)), format: job.format, origin: job.origin },
    new Uint8Array(readFileSync(job.optionsPath)),
  );
  const compileMs = performance.now() - started;
  const bytes = executable.serialize();
  writeFileSync(job.outputPath, bytes);
  executable.dispose();
  client.destroy();
  console.log(JSON.stringify({ ok: true, bytes: bytes.byteLength, compileMs }));
  process.exit(0);
} catch (error) {
  console.log(JSON.stringify({ error: asXlaserveError(error, "COMPILE_FAILED").toJSON() }));
  process.exit(2);
}
