import { expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { detectGpus } from "../src/node/gpus.ts";
import { parseNodeArgs } from "../src/node/node-command.ts";
import { planNode } from "../src/node/plan.ts";

const none = () => null;

test("GPUs come from XLASERVE_GPUS, then CUDA_VISIBLE_DEVICES, then nvidia-smi, then /dev/nvidiaN", () => {
  expect(detectGpus({ env: { XLASERVE_GPUS: "3" }, smi: none })).toEqual(["0", "1", "2"]);
  expect(detectGpus({ env: { XLASERVE_GPUS: "GPU-a1, GPU-b2" }, smi: none })).toEqual(["GPU-a1", "GPU-b2"]);
  expect(detectGpus({ env: { XLASERVE_GPUS: "0", CUDA_VISIBLE_DEVICES: "1" }, smi: none })).toEqual([]);
  expect(detectGpus({ env: { CUDA_VISIBLE_DEVICES: "4,6" }, smi: () => "0\n1\n" })).toEqual(["4", "6"]);
  expect(detectGpus({ env: { CUDA_VISIBLE_DEVICES: "" }, smi: () => "0\n" })).toEqual([]);
  expect(detectGpus({ env: {}, smi: () => "0\n1\n" })).toEqual(["0", "1"]);
  const dev = mkdtempSync(join(tmpdir(), "xlaserve-dev-"));
  try {
    for (const f of ["nvidia1", "nvidia0", "nvidia10", "nvidiactl", "nvidia-uvm"]) writeFileSync(join(dev, f), "");
    mkdirSync(join(dev, "dri"));
    expect(detectGpus({ env: {}, smi: none, devDir: dev })).toEqual(["0", "1", "10"]);
    expect(detectGpus({ env: {}, smi: none, devDir: join(dev, "dri") })).toEqual([]);
  } finally {
    rmSync(dev, { recursive: true, force: true });
  }
});

test("one worker per GPU on base + i, only its GPU visible; CPU workers share one port with a core share each", () => {
  const gpu = planNode({ gpus: ["0", "GPU-x"], cpuWorkers: 1, basePort: 9000, cores: 16, serveArgs: ["--no-watch"] });
  expect(gpu).toEqual([
    { name: "gpu0", args: ["--no-watch", "--port", "9000"], env: { CUDA_VISIBLE_DEVICES: "0" } },
    { name: "gpu1", args: ["--no-watch", "--port", "9001"], env: { CUDA_VISIBLE_DEVICES: "GPU-x" } },
  ]);
  const cpu = planNode({ gpus: [], cpuWorkers: 3, basePort: 8000, cores: 16, serveArgs: [] });
  expect(
    cpu.map((c) => [
      c.name,
      c.args.at(-1),
      c.env.CUDA_VISIBLE_DEVICES,
      c.env.XLASERVE_SERVER__REUSE_PORT,
      c.env.XLASERVE_BLAS_THREADS,
    ]),
  ).toEqual([
    ["cpu0", "8000", "", "true", "5"],
    ["cpu1", "8000", "", "true", "5"],
    ["cpu2", "8000", "", "true", "5"],
  ]);
  expect(() => planNode({ gpus: [], cpuWorkers: 0, basePort: 8000, cores: 2, serveArgs: [] })).toThrow(
    /--workers must be an integer from 1 to 256, got 0/,
  );
  expect(() => planNode({ gpus: ["0", "1"], cpuWorkers: 1, basePort: 65535, cores: 2, serveArgs: [] })).toThrow(
    /run past 65535/,
  );
});

test("node flags are the node's; everything else goes to every worker's serve", () => {
  const a = parseNodeArgs([
    "--workers",
    "2",
    "--repository",
    "/m",
    "--port=9100",
    "--backoff-ms",
    "50",
    "--no-watch",
    "--grace-seconds",
    "5",
  ]);
  expect(a).toMatchObject({
    workers: 2,
    port: 9100,
    backoffMs: 50,
    graceMs: 5000,
    serveArgs: ["--repository", "/m", "--no-watch"],
  });
  expect(() => parseNodeArgs(["--workers", "two"])).toThrow(/--workers expects an integer of at least 1, got "two"/);
  expect(() => parseNodeArgs(["--port"])).toThrow(/--port expects an integer/);
});

test("each child gets its own gRPC port when the node plans them (0: off)", () => {
  const gpu = planNode({
    gpus: ["0", "1"],
    cpuWorkers: 1,
    basePort: 9000,
    cores: 4,
    serveArgs: [],
    grpcPorts: [9100, 9101],
  });
  expect(gpu.map((c) => c.args)).toEqual([
    ["--port", "9000", "--grpc-port", "9100"],
    ["--port", "9001", "--grpc-port", "9101"],
  ]);
  const cpu = planNode({ gpus: [], cpuWorkers: 2, basePort: 8000, cores: 4, serveArgs: [], grpcPorts: [0, 0] });
  expect(cpu.map((c) => c.args)).toEqual([
    ["--port", "8000", "--grpc-port", "0"],
    ["--port", "8000", "--grpc-port", "0"],
  ]);
  expect(parseNodeArgs(["--grpc-port", "7001", "--no-watch"])).toMatchObject({
    grpcPort: 7001,
    serveArgs: ["--no-watch"],
  });
});
