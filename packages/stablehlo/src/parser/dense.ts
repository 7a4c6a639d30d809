import { ModuleError } from "../errors.ts";
import { type NDArray, alloc, elementCount, isComplexType, isFloatType, storageBytes } from "../elements.ts";
import { isSubByte, storeNumber, wrapSubByte } from "../elements.ts";
import type { TensorType } from "../ir.ts";

/**
 * Decodes the inside of `dense<...>` for a tensor type: splats, nested lists, complex pairs
 * `(re, im)`, booleans, decimal and hex numbers (a bare hex number for a float type is the
 * element's raw bits, as MLIR prints NaN and infinities) and `"0x..."` byte blobs.
 */
export function decodeDense(body: string, type: TensorType, fail: (message: string) => Error): NDArray {
  const out = alloc(type.elem, type.shape);
  const count = elementCount(type.shape);
  const text = body.trim();
  if (text.startsWith('"')) {
    const hex = text.slice(1, -1);
    if (!/^0x[0-9A-Fa-f]*$/.test(hex)) throw fail('expected a hex blob "0x..."');
    return decodeBlob(hex.slice(2), out, count, fail);
  }
  const tokens = text.match(/-?0x[0-9A-Fa-f]+|[-+]?(?:inf|nan)|[-+]?[0-9][0-9.eE+-]*|true|false|[()[\],]/g) ?? [];
  const values: string[] = [];
  for (const t of tokens) if (!"()[],".includes(t)) values.push(t);
  const slots = isComplexType(type.elem) ? 2 : 1;
  const per = values.length === slots ? 0 : 1; // one element given: splat
  if (per === 1 && values.length !== count * slots) {
    throw fail(`dense literal has ${values.length / slots} elements, type needs ${count}`);
  }
  if (slots === 2) {
    const d = out.data as Float32Array | Float64Array;
    for (let i = 0; i < count; i++) {
      const k = per * i * 2;
      d[2 * i] = parseFloatToken(values[k] as string, type.elem === "c64" ? 32 : 64);
      d[2 * i + 1] = parseFloatToken(values[k + 1] as string, type.elem === "c64" ? 32 : 64);
    }
    return out;
  }
  const parsed = values.map((v) => parseElement(v, out.type, fail));
  for (let i = 0; i < count; i++) storeParsed(out, i, parsed[per * i] as ParsedElement);
  return out;
}

type ParsedElement = { bits: number | bigint } | { value: number | bigint };

function parseElement(token: string, type: NDArray["type"], fail: (m: string) => Error): ParsedElement {
  if (token === "true") return { value: 1 };
  if (token === "false") return { value: 0 };
  if (/^-?0x/.test(token) && isFloatType(type)) {
    const big = BigInt(token.replace("-", ""));
    return { bits: storageBytes(type) === 8 ? big : Number(big) };
  }
  if (type === "i64" || type === "ui64") {
    if (!/^[-+]?(0x[0-9A-Fa-f]+|[0-9]+)$/.test(token)) throw fail(`'${token}' is not an integer`);
    const neg = token.startsWith("-");
    const mag = BigInt(token.replace(/^[-+]/, ""));
    return { value: neg ? -mag : mag };
  }
  const v = parseFloatToken(token, 64);
  if (Number.isNaN(v) && !/nan/.test(token)) throw fail(`'${token}' is not a number`);
  return { value: v };
}

function parseFloatToken(token: string, bits: 32 | 64): number {
  if (/^-?0x/.test(token)) {
    const big = BigInt(token.replace("-", ""));
    if (bits === 32) return new Float32Array(new Uint32Array([Number(big)]).buffer)[0] as number;
    return new Float64Array(new BigUint64Array([big]).buffer)[0] as number;
  }
  if (/inf/.test(token)) return token.startsWith("-") ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY;
  if (/nan/.test(token)) return Number.NaN;
  return Number(token);
}

function storeParsed(out: NDArray, i: number, p: ParsedElement): void {
  if ("bits" in p) {
    const bytes = storageBytes(out.type);
    const view =
      bytes === 8
        ? new BigUint64Array(out.data.buffer, out.data.byteOffset, out.data.length)
        : bytes === 4
          ? new Uint32Array(out.data.buffer, out.data.byteOffset, out.data.length)
          : out.data;
    if (bytes === 8) (view as BigUint64Array)[i] = BigInt(p.bits);
    else (view as Uint32Array)[i] = Number(p.bits);
    return;
  }
  storeNumber(out, i, p.value);
}

function decodeBlob(hex: string, out: NDArray, count: number, fail: (m: string) => Error): NDArray {
  const size = storageBytes(out.type);
  const bytes = hexToBytes(hex, fail);
  const target = new Uint8Array(out.data.buffer, out.data.byteOffset, out.data.byteLength);
  if (bytes.length === size * count) target.set(bytes);
  else if (bytes.length === size) for (let i = 0; i < count; i++) target.set(bytes, i * size);
  else throw fail(`hex blob has ${bytes.length} bytes, type needs ${size * count}`);
  if (isSubByte(out.type) || out.type === "i1") {
    const d = out.data as Int8Array;
    for (let i = 0; i < d.length; i++) d[i] = wrapSubByte(out.type, d[i] as number);
  }
  return out;
}

export function unsupportedDense(what: string): ModuleError {
  return new ModuleError("UNSUPPORTED", `dense attribute ${what} is not supported`);
}

const HEX_VALUE = new Int8Array(128).fill(-1);
for (let i = 0; i < 10; i++) HEX_VALUE[48 + i] = i;
for (let i = 0; i < 6; i++) {
  HEX_VALUE[65 + i] = 10 + i;
  HEX_VALUE[97 + i] = 10 + i;
}

/** Hex digits to bytes through a table (weights inlined as constants can be megabytes). */
function hexToBytes(hex: string, fail: (m: string) => Error): Uint8Array {
  if (hex.length % 2 !== 0) throw fail("hex blob has an odd number of digits");
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) {
    const hi = HEX_VALUE[hex.charCodeAt(2 * i) & 127] as number;
    const lo = HEX_VALUE[hex.charCodeAt(2 * i + 1) & 127] as number;
    if (hi < 0 || lo < 0) throw fail(`'${hex.slice(2 * i, 2 * i + 2)}' is not a hex byte`);
    bytes[i] = (hi << 4) | lo;
  }
  return bytes;
}
