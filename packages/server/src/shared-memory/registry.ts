import { closeSync, existsSync, fstatSync, openSync } from "node:fs";
import { XlaserveError, noteMappedFile } from "@xlaserve/core";
import { badRequest } from "../http-error.ts";

/** Where POSIX shared-memory objects live on Linux: shm_open("/name") is /dev/shm/name. */
const SHM_DIR = "/dev/shm";
const HAS_PROC_FDS = existsSync("/proc/self/fd");

/** One registered region, as Triton's status calls report it. */
export interface RegionStatus {
  readonly name: string;
  readonly key: string;
  readonly offset: number;
  readonly byteSize: number;
}

interface Region extends RegionStatus {
  /** The object mapped from its start through offset + byteSize (MAP_SHARED). */
  readonly map: Uint8Array;
  /** Kept open so each use can check the object still covers the region (fstat, no path lookup). */
  readonly fd: number;
}

/**
 * Triton's system shared memory extension: clients register a region of a POSIX shared-memory
 * object (key, offset, byte_size) under a name, then point tensors at it. Each object is mapped
 * once with Bun.mmap, so inputs are read and outputs written in place, with no copy through a
 * socket. Every access is bounds-checked against the region, and the object's current size is
 * checked again before each use: a client that shrank it after registering gets an error, never
 * a read past the end of the file (which would be SIGBUS).
 */
export class SharedMemoryRegistry {
  private readonly regions = new Map<string, Region>();

  register(name: string, key: string, offset: number, byteSize: number): void {
    if (name === "") throw badRequest("a shared-memory region needs a non-empty name");
    checkCount("offset", offset);
    checkCount("byte_size", byteSize);
    if (byteSize === 0) throw badRequest(`shared-memory region "${name}": byte_size must be at least 1`);
    if (this.regions.has(name)) {
      throw badRequest(`shared-memory region "${name}" is already registered; unregister it first`);
    }
    const path = shmPath(key);
    if (path === null) throw badRequest(`shared-memory key "${key}" is not a POSIX shared-memory object name`);
    let fd: number;
    try {
      fd = openSync(path, "r+");
    } catch (error) {
      throw badRequest(
        `shared-memory key "${key}" does not open here (${(error as NodeJS.ErrnoException).code ?? error}): the object must exist in this host's IPC namespace`,
      );
    }
    try {
      const size = fstatSync(fd).size;
      if (offset + byteSize > size) {
        throw badRequest(
          `shared-memory region "${name}": offset ${offset} + byte_size ${byteSize} is past the end of "${key}" (${size} bytes)`,
        );
      }
      const map = Bun.mmap(path, { shared: true, size: offset + byteSize });
      if (map.byteLength < offset + byteSize) {
        throw badRequest(`shared-memory region "${name}": "${key}" mapped only ${map.byteLength} bytes`);
      }
      // An engine on another thread then reads large inputs from its own mapping of the same
      // object (by this descriptor, so a name the client reuses meanwhile cannot swap it).
      if (HAS_PROC_FDS) noteMappedFile(map, `/proc/self/fd/${fd}`);
      this.regions.set(name, { name, key, offset, byteSize, map, fd });
    } catch (error) {
      closeSync(fd);
      throw error;
    }
  }

  /** Unregisters one region, or every region when `name` is empty; an unknown name is a no-op (as in Triton). */
  unregister(name: string): void {
    const names = name === "" ? [...this.regions.keys()] : [name];
    for (const n of names) {
      const region = this.regions.get(n);
      if (!region) continue;
      this.regions.delete(n);
      // The mapping itself goes with the last view of it (a request still reading keeps it alive).
      closeSync(region.fd);
    }
  }

  /** Every region, or the one named (NOT_FOUND when it is not registered). */
  status(name = ""): RegionStatus[] {
    if (name === "") return [...this.regions.values()].map(statusOf);
    const region = this.regions.get(name);
    if (!region) throw new XlaserveError("NOT_FOUND", `no shared-memory region "${name}" is registered`);
    return [statusOf(region)];
  }

  get size(): number {
    return this.regions.size;
  }

  /**
   * The bytes [offset, offset + byteSize) of a region, as a view of the mapping. `what` names the
   * tensor for the error messages.
   */
  view(what: string, name: string, offset: number, byteSize: number): Uint8Array {
    const region = this.regions.get(name);
    if (!region) throw badRequest(`${what}: shared-memory region "${name}" is not registered`);
    if (offset + byteSize > region.byteSize) {
      throw badRequest(
        `${what}: ${byteSize} bytes at offset ${offset} run past the end of shared-memory region "${name}" (${region.byteSize} bytes)`,
      );
    }
    const size = fstatSync(region.fd).size;
    if (region.offset + region.byteSize > size) {
      throw badRequest(
        `${what}: shared-memory object "${region.key}" shrank to ${size} bytes, smaller than region "${name}" (offset ${region.offset} + ${region.byteSize} bytes); register it again`,
      );
    }
    const start = region.offset + offset;
    return region.map.subarray(start, start + byteSize);
  }

  /** Unregisters everything (the server is stopping). */
  close(): void {
    this.unregister("");
  }
}

/**
 * ReactantServer's IsSameIPCNamespace probe: true only when the object opens here, which is
 * what a client needs before it registers regions of it.
 */
export function isSameIpcNamespace(key: string): boolean {
  const path = shmPath(key);
  if (path === null) return false;
  try {
    closeSync(openSync(path, "r"));
    return true;
  } catch {
    return false;
  }
}

/** /dev/shm/<name> for "/name" or "name"; null for anything that is not one path component. */
function shmPath(key: string): string | null {
  const name = key.startsWith("/") ? key.slice(1) : key;
  if (name === "" || name === "." || name === ".." || name.includes("/") || name.includes("\0")) return null;
  return `${SHM_DIR}/${name}`;
}

function checkCount(field: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) throw badRequest(`${field} must be a non-negative integer`);
}

function statusOf(region: Region): RegionStatus {
  return { name: region.name, key: region.key, offset: region.offset, byteSize: region.byteSize };
}
