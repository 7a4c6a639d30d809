/** sha256 helpers. Every hash in the cache is sha256 so one primitive covers names and checks. */

export function sha256(bytes: Uint8Array | string): Uint8Array {
  const hasher = new Bun.CryptoHasher("sha256");
  hasher.update(bytes);
  return new Uint8Array(hasher.digest().buffer);
}

export function sha256Hex(bytes: Uint8Array | string): string {
  const hasher = new Bun.CryptoHasher("sha256");
  hasher.update(bytes);
  return hasher.digest("hex");
}

export function toHex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex");
}

/** Constant-size comparison of two digests (not secret, so timing does not matter). */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
