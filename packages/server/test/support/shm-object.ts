import { existsSync, rmSync, writeFileSync } from "node:fs";

let next = 0;

/**
 * A real POSIX shared-memory object: what shm_open("/name", O_CREAT) and ftruncate make on Linux
 * is a file of that name in /dev/shm, which is how the tests create the clients' side.
 */
export class ShmObject {
  readonly key: string;
  readonly path: string;

  constructor(bytes: number | Uint8Array) {
    const name = `xlaserve-test-${process.pid}-${Date.now()}-${next++}`;
    this.key = `/${name}`;
    this.path = `/dev/shm/${name}`;
    writeFileSync(this.path, typeof bytes === "number" ? new Uint8Array(bytes) : bytes);
  }

  /** The object's bytes as the client sees them now (a second mapping of the same file). */
  bytes(): Uint8Array {
    return Bun.mmap(this.path, { shared: true });
  }

  remove(): void {
    if (existsSync(this.path)) rmSync(this.path);
  }
}

export const SHM_AVAILABLE = existsSync("/dev/shm");
