import { type DType, dtypeFromSafetensors, dtypeSize } from "../dtypes.ts";
import { elementCount } from "../tensor.ts";
import { type BundleFileRef, bundleError, describeValue } from "./problems.ts";
import type { WeightEntry } from "./types.ts";

/**
 * Validation of a safetensors header against the file it describes. ReactantServer trusts the
 * header; here every claim is checked before any tensor is handed out, because a bad offset would
 * otherwise surface as garbage on the device: the length fits the file, the JSON parses, dtypes
 * are known, shapes are non-negative, dtype x shape = byte length, and the tensors tile the data
 * section with no overlap, hole or trailing bytes (the format's own rule).
 */

/** The Python and Rust implementations refuse headers above 100 MB; so do we (a corrupt length). */
const MAX_HEADER_BYTES = 100_000_000;
export const HEADER_LENGTH_BYTES = 8;

export interface SafetensorsLayout {
  readonly metadata: Record<string, string>;
  /** Entries sorted by offset; offsets are relative to the file start. */
  readonly entries: WeightEntry[];
  /** `__metadata__.argument_order`, or [] when absent and not required. */
  readonly argumentOrder: string[];
}

/** Parses and checks the header of a complete file image (the mapped bytes). */
export function readSafetensorsLayout(
  bytes: Uint8Array,
  requireArgumentOrder: boolean,
  where: BundleFileRef,
): SafetensorsLayout {
  const { header, dataStart } = readHeader(bytes, where);
  const metadata = readMetadata(header, where);
  const entries = readEntries(header, dataStart, bytes.byteLength - dataStart, where);
  const argumentOrder = readArgumentOrder(metadata, entries, requireArgumentOrder, where);
  return { metadata, entries, argumentOrder };
}

export function corrupt(where: BundleFileRef, field: string, problem: string, extra: Record<string, unknown> = {}) {
  return bundleError("WEIGHTS_CORRUPT", where, field, problem, extra);
}

function readHeader(bytes: Uint8Array, where: BundleFileRef): { header: Record<string, unknown>; dataStart: number } {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const declared = view.getBigUint64(0, true);
  const available = BigInt(bytes.byteLength - HEADER_LENGTH_BYTES);
  if (declared > available) {
    throw corrupt(
      where,
      "header",
      `header length ${declared} runs past the end of the file (${bytes.byteLength} bytes)`,
    );
  }
  if (declared > BigInt(MAX_HEADER_BYTES)) {
    throw corrupt(where, "header", `header length ${declared} exceeds the ${MAX_HEADER_BYTES}-byte limit`);
  }
  const headerLength = Number(declared);
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(
      bytes.subarray(HEADER_LENGTH_BYTES, HEADER_LENGTH_BYTES + headerLength),
    );
  } catch {
    throw corrupt(where, "header", "header is not valid UTF-8");
  }
  let header: unknown;
  try {
    header = JSON.parse(text);
  } catch (cause) {
    throw corrupt(where, "header", `header is not valid JSON (${(cause as Error).message})`);
  }
  if (header === null || typeof header !== "object" || Array.isArray(header)) {
    throw corrupt(where, "header", `header must be a JSON object, found ${describeValue(header)}`);
  }
  return { header: header as Record<string, unknown>, dataStart: HEADER_LENGTH_BYTES + headerLength };
}

function readMetadata(header: Record<string, unknown>, where: BundleFileRef): Record<string, string> {
  const raw = header.__metadata__;
  if (raw === undefined) return {};
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    throw corrupt(where, "__metadata__", `must be a map of strings, found ${describeValue(raw)}`);
  }
  const metadata: Record<string, string> = {};
  for (const [key, value] of Object.entries(raw)) {
    if (typeof value !== "string") {
      throw corrupt(where, `__metadata__.${key}`, `must be a string, found ${describeValue(value)}`);
    }
    metadata[key] = value;
  }
  return metadata;
}

function readEntries(
  header: Record<string, unknown>,
  dataStart: number,
  dataLength: number,
  where: BundleFileRef,
): WeightEntry[] {
  const entries: WeightEntry[] = [];
  for (const [name, raw] of Object.entries(header)) {
    if (name === "__metadata__") continue;
    entries.push(readEntry(name, raw, dataStart, dataLength, where));
  }
  entries.sort((a, b) => a.byteOffset - b.byteOffset || a.byteLength - b.byteLength);
  // The format requires the tensors to tile the data section exactly: an overlap means two
  // tensors share bytes, a gap or a short section means a truncated or spliced file.
  let expectedStart = dataStart;
  let previous: WeightEntry | undefined;
  for (const entry of entries) {
    if (entry.byteOffset < expectedStart && previous) {
      throw corrupt(
        where,
        `${entry.name}.data_offsets`,
        `tensor "${entry.name}" overlaps tensor "${previous.name}" (starts at data byte ${entry.byteOffset - dataStart}, "${previous.name}" ends at ${expectedStart - dataStart})`,
        { tensor: entry.name },
      );
    }
    if (entry.byteOffset > expectedStart) {
      throw corrupt(
        where,
        `${entry.name}.data_offsets`,
        `${entry.byteOffset - expectedStart} unused bytes before tensor "${entry.name}" (the data section must have no holes)`,
        { tensor: entry.name },
      );
    }
    expectedStart = entry.byteOffset + entry.byteLength;
    previous = entry;
  }
  const dataEnd = dataStart + dataLength;
  if (expectedStart !== dataEnd) {
    throw corrupt(
      where,
      "data",
      `${dataEnd - expectedStart} trailing bytes after the last tensor (the data section must be exactly covered)`,
    );
  }
  return entries;
}

function readEntry(
  name: string,
  raw: unknown,
  dataStart: number,
  dataLength: number,
  where: BundleFileRef,
): WeightEntry {
  const fail = (field: string, problem: string) =>
    corrupt(where, `${name}.${field}`, `tensor "${name}": ${problem}`, { tensor: name });
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    throw fail("entry", `entry must be an object, found ${describeValue(raw)}`);
  }
  const entry = raw as Record<string, unknown>;
  const dtypeName = entry.dtype;
  if (typeof dtypeName !== "string") throw fail("dtype", `dtype must be a string, found ${describeValue(dtypeName)}`);
  const dtype: DType | undefined = dtypeFromSafetensors(dtypeName);
  if (!dtype) throw fail("dtype", `unknown dtype "${dtypeName}"`);
  const shape = entry.shape;
  if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
    throw fail("shape", `shape must be a list of non-negative integers, found ${JSON.stringify(shape)}`);
  }
  const offsets = entry.data_offsets;
  if (
    !Array.isArray(offsets) ||
    offsets.length !== 2 ||
    !offsets.every((o) => Number.isSafeInteger(o) && o >= 0) ||
    offsets[0] > offsets[1]
  ) {
    throw fail(
      "data_offsets",
      `data_offsets must be [begin, end] with 0 <= begin <= end, found ${JSON.stringify(offsets)}`,
    );
  }
  const [begin, end] = offsets as [number, number];
  if (end > dataLength) {
    throw fail(
      "data_offsets",
      `data_offsets [${begin}, ${end}] run past the data section (${dataLength} bytes): the file is truncated or the header is wrong`,
    );
  }
  const expected = elementCount(shape as number[]) * dtypeSize(dtype);
  if (end - begin !== expected) {
    throw fail(
      "data_offsets",
      `${dtypeName} x shape [${shape.join(", ")}] is ${expected} bytes but data_offsets [${begin}, ${end}] hold ${end - begin}`,
    );
  }
  return { name, dtype, shape: [...(shape as number[])], byteOffset: dataStart + begin, byteLength: end - begin };
}

function readArgumentOrder(
  metadata: Record<string, string>,
  entries: readonly WeightEntry[],
  required: boolean,
  where: BundleFileRef,
): string[] {
  const field = "__metadata__.argument_order";
  const text = metadata.argument_order;
  if (text === undefined) {
    if (required && entries.length > 0) {
      throw corrupt(where, field, "the file has tensors but no argument_order (the weights' call order)");
    }
    return [];
  }
  let order: unknown;
  try {
    order = JSON.parse(text);
  } catch (cause) {
    throw corrupt(where, field, `is not valid JSON (${(cause as Error).message})`);
  }
  if (!Array.isArray(order) || !order.every((n) => typeof n === "string")) {
    throw corrupt(where, field, "must be a JSON list of tensor names");
  }
  const present = new Set(entries.map((e) => e.name));
  const seen = new Set<string>();
  for (const name of order as string[]) {
    if (seen.has(name)) throw corrupt(where, field, `names tensor "${name}" twice`, { tensor: name });
    if (!present.has(name))
      throw corrupt(where, field, `names tensor "${name}", which is not in the file`, { tensor: name });
    seen.add(name);
  }
  return order as string[];
}
