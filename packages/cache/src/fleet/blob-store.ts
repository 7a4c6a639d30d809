import { XlaserveError } from "@xlaserve/core";
import { DirBlobStore } from "./dir-store.ts";
import { S3BlobStore } from "./s3-store.ts";

/**
 * Where the fleet's compiled programs live: a directory every worker mounts (NFS, a CSI
 * volume) or an S3-compatible bucket. Blobs are written whole or not at all and never
 * rewritten in place (a rebuilt program gets a new name), so a reader never sees a mix; what a
 * reader gets is still checked against the catalog's checksum, because storage can rot.
 */
export interface BlobStore {
  /** For messages: the directory or `s3://bucket/prefix`. */
  readonly where: string;
  /** The blob's bytes, or null when there is none. Other failures throw. */
  get(name: string): Promise<Uint8Array | null>;
  put(name: string, bytes: Uint8Array): Promise<void>;
  delete(name: string): Promise<void>;
}

/** `s3://bucket/prefix` -> an S3 store; anything else is a directory. */
export function openBlobStore(spec: string, env: Record<string, string | undefined> = process.env): BlobStore {
  if (spec.startsWith("s3://")) return S3BlobStore.fromUrl(spec, env);
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(spec)) {
    throw new XlaserveError(
      "INVALID_ARGUMENT",
      `cache.store must be a directory or an s3:// URL, got ${JSON.stringify(spec)}`,
    );
  }
  return new DirBlobStore(spec);
}
