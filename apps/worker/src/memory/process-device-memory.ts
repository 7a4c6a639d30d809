import type { Logger } from "@xlaserve/core";

/** A driver query takes tens of milliseconds: scrapes within this long reuse the last answer. */
const REFRESH_MS = 5_000;
const QUERY_TIMEOUT_MS = 3_000;

/** How many bytes this process holds on its device, as far as anything here can tell. */
export interface ProcessDeviceMemory {
  sample(): Promise<number | null>;
}

/** Host memory is the device (the CPU engine): the process's resident set. */
export const residentSet: ProcessDeviceMemory = {
  sample: async () => process.memoryUsage.rss(),
};

/** Nothing reports it for this platform (a TPU or ROCm plugin). */
export const unmeasured: ProcessDeviceMemory = { sample: async () => null };

/**
 * Device memory this process holds per the NVIDIA driver (`nvidia-smi --query-compute-apps`,
 * summed over the lines of this PID), which sees what the allocator cannot: the CUDA context,
 * loaded modules, command buffers. Matched by PID because nvidia-smi ignores
 * CUDA_VISIBLE_DEVICES. Null while the driver lists no memory for this process, or when
 * nvidia-smi is missing (said once in the log: a container needs the NVIDIA "utility" capability).
 */
export class NvidiaSmiMemory implements ProcessDeviceMemory {
  private bytes: number | null = null;
  private at = Number.NEGATIVE_INFINITY;
  private running: Promise<void> | null = null;
  private warned = false;

  constructor(
    private readonly log: Logger,
    private readonly smi: string | null = Bun.which("nvidia-smi"),
    private readonly pid = process.pid,
  ) {}

  async sample(): Promise<number | null> {
    if (performance.now() - this.at >= REFRESH_MS) {
      this.running ??= this.refresh().finally(() => {
        this.running = null;
      });
      await this.running;
    }
    return this.bytes;
  }

  private async refresh(): Promise<void> {
    this.at = performance.now();
    if (!this.smi) {
      this.warnOnce("nvidia-smi not found");
      this.bytes = null;
      return;
    }
    try {
      const child = Bun.spawn([this.smi, "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"], {
        stdout: "pipe",
        stderr: "ignore",
      });
      const timer = setTimeout(() => child.kill(), QUERY_TIMEOUT_MS);
      const text = await new Response(child.stdout).text();
      const code = await child.exited;
      clearTimeout(timer);
      this.bytes = code === 0 ? processBytesFromComputeApps(text, this.pid) : null;
      if (code !== 0) this.warnOnce(`nvidia-smi exited with ${code}`);
    } catch (error) {
      this.bytes = null;
      this.warnOnce(`nvidia-smi failed: ${(error as Error).message}`);
    }
  }

  private warnOnce(why: string): void {
    if (this.warned) return;
    this.warned = true;
    this.log.warn("device memory outside the allocator's pool is not measured", {
      why,
      series: "worker_device_memory_process_used_bytes, worker_device_memory_out_of_pool_bytes",
      hint: "in a container, set NVIDIA_DRIVER_CAPABILITIES=compute,utility",
    });
  }
}

/** Bytes `pid` holds per `nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits` (MiB). */
export function processBytesFromComputeApps(text: string, pid: number): number | null {
  let mib: number | null = null;
  for (const line of text.split("\n")) {
    const [p, used] = line.split(",").map((x) => x.trim());
    if (p !== String(pid) || used === undefined || !/^\d+$/.test(used)) continue;
    mib = (mib ?? 0) + Number(used);
  }
  return mib === null ? null : mib * 1024 * 1024;
}
