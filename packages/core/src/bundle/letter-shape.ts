import { type DType, isDType } from "../dtypes.ts";
import { type BundleFileRef, bundleInvalid, describeValue } from "./problems.ts";
import type { Dim, TensorSpec } from "./types.ts";

/**
 * The manifest's einsum-style tensor specs: `shape: "chwn"` (one ASCII letter per axis, in Julia's
 * column-major order) plus `dims: {c: 3, h: 224, w: 224}`. `n` and `b` mark the batch axis and
 * take no dims entry; `-1` marks a variable axis. The result is row-major (letters reversed),
 * which is what XLA modules and KServe clients use.
 */

const BATCH_LETTERS = new Set(["n", "b"]);
const ASCII_LETTER = /^[A-Za-z]$/;

export function isBatchLetter(letter: string): boolean {
  return BATCH_LETTERS.has(letter);
}

/** Parses one entry of a tensor list; `field` is its path ("executable_inputs[0]"). */
export function parseTensorSpec(raw: unknown, field: string, where: BundleFileRef): TensorSpec {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    throw bundleInvalid(where, field, `tensor entry must be a mapping, found ${describeValue(raw)}`);
  }
  const entry = raw as Record<string, unknown>;
  const name = entry.name;
  if (typeof name !== "string" || name === "") {
    throw bundleInvalid(
      where,
      `${field}.name`,
      `tensor entry needs a non-empty string name, found ${describeValue(name)}`,
    );
  }
  const at = `${field} ("${name}")`;
  const token = entry.dtype;
  if (typeof token !== "string") {
    throw bundleInvalid(where, `${at}.dtype`, `dtype must be a string token, found ${describeValue(token)}`);
  }
  if (!isDType(token)) throw bundleInvalid(where, `${at}.dtype`, `unknown dtype "${token}"`);
  const letters = entry.shape;
  if (typeof letters !== "string") {
    throw bundleInvalid(
      where,
      `${at}.shape`,
      `shape must be a string of axis letters, found ${describeValue(letters)}`,
    );
  }
  const dims = parseLetterDims(letters, entry.dims, at, where);
  const batchIndex = dims.findIndex((d) => d.kind === "batch");
  return { name, dtype: token as DType, letters, dims, batchAxis: batchIndex === -1 ? null : batchIndex };
}

/** Letters + dims map -> row-major dims. */
export function parseLetterDims(letters: string, rawDims: unknown, at: string, where: BundleFileRef): Dim[] {
  const chars = [...letters];
  for (const c of chars) {
    if (!ASCII_LETTER.test(c)) {
      throw bundleInvalid(where, `${at}.shape`, `shape "${letters}" has "${c}", which is not an ASCII letter`);
    }
  }
  const seen = new Set<string>();
  for (const c of chars) {
    if (seen.has(c)) throw bundleInvalid(where, `${at}.shape`, `shape "${letters}" uses the letter "${c}" twice`);
    seen.add(c);
  }
  const batchLetters = chars.filter(isBatchLetter);
  if (batchLetters.length > 1) {
    throw bundleInvalid(
      where,
      `${at}.shape`,
      `shape "${letters}" has ${batchLetters.length} batch axes (${batchLetters.join(", ")}); n/b may appear once`,
    );
  }
  const sizes = parseDimsMap(rawDims, at, where);
  for (const key of sizes.keys()) {
    if (!seen.has(key)) {
      throw bundleInvalid(where, `${at}.dims.${key}`, `dims has "${key}", which is not a letter of shape "${letters}"`);
    }
  }
  const columnMajor = chars.map((letter): Dim => {
    if (isBatchLetter(letter)) return { kind: "batch", size: -1, letter };
    const size = sizes.get(letter);
    if (size === undefined) {
      throw bundleInvalid(where, `${at}.dims`, `shape "${letters}" uses "${letter}" but dims gives no size for it`);
    }
    return size === -1 ? { kind: "variable", size: -1, letter } : { kind: "fixed", size, letter };
  });
  return columnMajor.reverse();
}

function parseDimsMap(raw: unknown, at: string, where: BundleFileRef): Map<string, number> {
  const sizes = new Map<string, number>();
  // An absent (or empty `dims:`) map is fine for tensors whose only axis is the batch axis.
  if (raw === undefined || raw === null) return sizes;
  if (typeof raw !== "object" || Array.isArray(raw)) {
    throw bundleInvalid(where, `${at}.dims`, `dims must be a mapping of letters to sizes, found ${describeValue(raw)}`);
  }
  for (const [key, value] of Object.entries(raw)) {
    if (!ASCII_LETTER.test(key)) {
      throw bundleInvalid(where, `${at}.dims.${key}`, `dims key "${key}" is not a single ASCII letter`);
    }
    if (isBatchLetter(key)) {
      throw bundleInvalid(where, `${at}.dims.${key}`, `"${key}" is reserved for the batch axis and takes no size`);
    }
    if (typeof value !== "number" || !Number.isSafeInteger(value)) {
      throw bundleInvalid(where, `${at}.dims.${key}`, `size must be an integer, found ${describeValue(value)}`);
    }
    if (value <= 0 && value !== -1) {
      throw bundleInvalid(
        where,
        `${at}.dims.${key}`,
        `size ${value} is invalid: must be > 0, or -1 for a variable axis`,
      );
    }
    sizes.set(key, value);
  }
  return sizes;
}

/** "[n, 64]" style rendering of row-major dims for messages. */
export function formatDims(dims: readonly Dim[]): string {
  return `[${dims.map((d) => (d.kind === "fixed" ? String(d.size) : d.kind === "batch" ? d.letter : `${d.letter}?`)).join(", ")}]`;
}
