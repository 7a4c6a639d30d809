/**
 * A fresh process that loads a serialized executable and runs it once: argv[2] is a job JSON
 * {plugin, executable, args: [{file, dtype, shape}], out}. Writes each output's raw bytes to
 * <out>.<i> and prints timings, measured from the process's own start.
 */
import { readFileSync, writeFileSync } from "node:fs";
import type { DType } from "@xlaserve/core";
import { viewTyped, dtypeSize } from "@xlaserve/core";
import { createPjrtBackend } from "../../../packages/backend-pjrt/src/index.ts";

const job = JSON.parse(readFileSync(process.argv[2] ?? "", "utf8")) as {
  plugin: string;
  executable: string;
  args: { file: string; dtype: DType; shape: number[] }[];
  out: string;
};
const t0 = performance.now();
const backend = createPjrtBackend({ pluginPath: job.plugin, isolateCompile: false });
const t1 = performance.now();
const exe = await backend.deserialize(new Uint8Array(readFileSync(job.executable)), {});
const t2 = performance.now();
// All uploads in flight at once: the transfers overlap instead of waiting one by one.
const buffers = await Promise.all(
  job.args.map((a) => {
    const bytes = readFileSync(a.file);
    const storage = new ArrayBuffer(bytes.byteLength);
    new Uint8Array(storage).set(bytes);
    const data = viewTyped(a.dtype, storage, 0, bytes.byteLength / dtypeSize(a.dtype));
    return backend.upload({ dtype: a.dtype, shape: a.shape, data });
  }),
);
const outs = await backend.execute(exe, buffers);
const host = await Promise.all(outs.map((o) => backend.download(o)));
const t3 = performance.now();
host.forEach((h, i) => {
  writeFileSync(`${job.out}.${i}`, new Uint8Array(h.data.buffer, h.data.byteOffset, h.data.byteLength));
});
console.log(
  JSON.stringify({
    // performance.now() counts from this process's time origin: its start.
    processStartToFirstResultMs: t3,
    clientCreateMs: t1 - t0,
    deserializeMs: t2 - t1,
    uploadRunDownloadMs: t3 - t2,
  }),
);
await backend.dispose();
process.exit(0);
