import { S3Client } from "bun";
import { XlaserveError } from "@xlaserve/core";
import { checkBlobName } from "./blob-name.ts";
import type { BlobStore } from "./blob-store.ts";

/**
 * Blobs as objects in an S3-compatible bucket through Bun's S3 client. Credentials, region and
 * endpoint come from the environment, S3_* or AWS_* (S3_ACCESS_KEY_ID / AWS_ACCESS_KEY_ID,
 * S3_SECRET_ACCESS_KEY, S3_SESSION_TOKEN, S3_ENDPOINT / AWS_ENDPOINT_URL, S3_REGION). A PUT
 * makes an object visible whole or not at all, which is the atomic write the store needs.
 */
export class S3BlobStore implements BlobStore {
  constructor(
    private readonly client: S3Client,
    readonly bucket: string,
    readonly prefix: string,
  ) {}

  static fromUrl(url: string, env: Record<string, string | undefined> = process.env): S3BlobStore {
    const m = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/(.*))?$/.exec(url);
    if (!m)
      throw new XlaserveError("INVALID_ARGUMENT", `cache.store: not an s3://bucket/prefix URL: ${JSON.stringify(url)}`);
    const bucket = m[1]!;
    const prefix = (m[2] ?? "").replace(/^\/+|\/+$/g, "");
    const pick = (...names: string[]) => names.map((n) => env[n]).find((v) => v !== undefined && v !== "");
    const endpoint = pick("S3_ENDPOINT", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL");
    const accessKeyId = pick("S3_ACCESS_KEY_ID", "AWS_ACCESS_KEY_ID");
    const secretAccessKey = pick("S3_SECRET_ACCESS_KEY", "AWS_SECRET_ACCESS_KEY");
    const sessionToken = pick("S3_SESSION_TOKEN", "AWS_SESSION_TOKEN");
    const region = pick("S3_REGION", "AWS_REGION", "AWS_DEFAULT_REGION");
    const client = new S3Client({
      bucket,
      ...(endpoint ? { endpoint } : {}),
      ...(accessKeyId ? { accessKeyId } : {}),
      ...(secretAccessKey ? { secretAccessKey } : {}),
      ...(sessionToken ? { sessionToken } : {}),
      ...(region ? { region } : {}),
    });
    return new S3BlobStore(client, bucket, prefix);
  }

  get where(): string {
    return `s3://${this.bucket}/${this.prefix}`;
  }

  #key(name: string): string {
    checkBlobName(name);
    return this.prefix ? `${this.prefix}/${name}` : name;
  }

  async get(name: string): Promise<Uint8Array | null> {
    try {
      return new Uint8Array(await this.client.file(this.#key(name)).arrayBuffer());
    } catch (e) {
      const code = (e as { code?: string }).code;
      if (code === "NoSuchKey" || code === "ERR_S3_FILE_NOT_FOUND" || /not ?found|NoSuchKey/i.test(String(e)))
        return null;
      throw e;
    }
  }

  async put(name: string, bytes: Uint8Array): Promise<void> {
    await this.client.write(this.#key(name), bytes);
  }

  async delete(name: string): Promise<void> {
    await this.client.delete(this.#key(name));
  }
}
