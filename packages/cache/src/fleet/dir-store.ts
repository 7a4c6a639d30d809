import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { writeFileAtomic } from "../atomic-write.ts";
import { checkBlobName } from "./blob-name.ts";
import type { BlobStore } from "./blob-store.ts";

/**
 * Blobs as files under a shared directory, one subdirectory per partition. Written to a
 * temporary file in the same directory, fsynced and renamed, so a worker on another host sees
 * the whole file or none (NFS keeps rename atomic within a directory).
 */
export class DirBlobStore implements BlobStore {
  readonly root: string;
  constructor(root: string) {
    this.root = resolve(root);
  }

  get where(): string {
    return this.root;
  }

  path(name: string): string {
    return join(this.root, checkBlobName(name));
  }

  async get(name: string): Promise<Uint8Array | null> {
    try {
      return new Uint8Array(readFileSync(this.path(name)));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw e;
    }
  }

  async put(name: string, bytes: Uint8Array): Promise<void> {
    const path = this.path(name);
    mkdirSync(dirname(path), { recursive: true });
    writeFileAtomic(path, bytes);
  }

  async delete(name: string): Promise<void> {
    rmSync(this.path(name), { force: true });
  }
}
