/** The header values of gRPC over HTTP/2 that the server reads and writes. */

const TIMEOUT_UNIT_MS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 1e-3, n: 1e-6 };

/**
 * The milliseconds of a `grpc-timeout` value (1 to 8 digits and a unit: H M S m u n), or
 * undefined for a value that is not one.
 */
export function parseTimeout(value: string): number | undefined {
  const unit = TIMEOUT_UNIT_MS[value.charAt(value.length - 1)];
  const digits = value.slice(0, -1);
  if (unit === undefined || digits.length === 0 || digits.length > 8 || !/^\d+$/.test(digits)) return undefined;
  return Number(digits) * unit;
}

/**
 * `grpc-message` as gRPC sends it: UTF-8, with every byte outside printable ASCII and every '%'
 * percent-encoded.
 */
export function encodeGrpcMessage(message: string): string {
  let plain = true;
  for (let i = 0; i < message.length; i++) {
    const c = message.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x25) {
      plain = false;
      break;
    }
  }
  if (plain) return message;
  let out = "";
  for (const byte of Buffer.from(message, "utf8")) {
    out +=
      byte < 0x20 || byte > 0x7e || byte === 0x25
        ? `%${byte.toString(16).toUpperCase().padStart(2, "0")}`
        : String.fromCharCode(byte);
  }
  return out;
}
