import { describe, expect, test } from "bun:test";
import { decodeJsonData } from "../src/infer/decode-data.ts";

/** The error message decodeJsonData throws for `data`, or null when it decodes. */
function errorOf(dtype: "f32" | "f64", shape: number[], data: unknown): string | null {
  try {
    decodeJsonData(
      'input "x"',
      dtype,
      shape,
      shape.reduce((a, b) => a * b, 1),
      data,
      1_000_000,
    );
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

describe("JSON float data: the flat fast path decodes and refuses exactly as the nested path", () => {
  const values = [0, -0, 1.5, -2.25, 1e-40, 3.4e38, 1e-300, 0.1, "NaN", "Infinity", "-Infinity", 7];

  for (const dtype of ["f32", "f64"] as const) {
    test(`${dtype}: same elements, bit for bit, flat and nested (non-finite literals included)`, () => {
      const flat = decodeJsonData('input "x"', dtype, [3, 4], 12, values, 1000);
      const nested = decodeJsonData(
        'input "x"',
        dtype,
        [3, 4],
        12,
        [values.slice(0, 4), values.slice(4, 8), values.slice(8)],
        1000,
      );
      expect(flat.constructor).toBe(nested.constructor);
      expect(new Uint8Array(flat.buffer, flat.byteOffset, flat.byteLength)).toEqual(
        new Uint8Array(nested.buffer, nested.byteOffset, nested.byteLength),
      );
      expect(flat.byteOffset).toBe(0);
      expect(flat.length).toBe(12);
    });

    test(`${dtype}: the same message for every kind of bad element, flat or nested`, () => {
      for (const bad of ["abc", null, true, {}, "nan"]) {
        const data = [1, 2, bad, 4];
        const flat = errorOf(dtype, [1, 4], data);
        const nested = errorOf(
          dtype,
          [2, 2],
          [
            [1, 2],
            [bad, 4],
          ],
        );
        expect(flat).not.toBeNull();
        // The nested message names the same element index and reason.
        expect(flat).toBe(nested);
      }
      // A list among scalars (which nested data reports as mixed nesting).
      expect(errorOf(dtype, [1, 4], [1, 2, [3], 4])).toBe(
        `input "x": element 2 (a list) is not a number; ${dtype === "f32" ? "FP32" : "FP64"} takes numbers`,
      );
      expect(errorOf(dtype, [1, 4], [1, 2, "abc", 4])).toBe(
        `input "x": element 2 ("abc") is not a number; ${dtype === "f32" ? "FP32" : "FP64"} takes numbers`,
      );
    });
  }

  test("element count and size checks come before the fast path", () => {
    expect(errorOf("f32", [1, 4], [1, 2, 3])).toBe('input "x": data has 3 elements but shape [1, 4] needs 4');
    expect(() => decodeJsonData('input "x"', "f32", [1, 4], 4, [1, 2, 3, 4], 3)).toThrow(
      "more than the request's data holds",
    );
  });
});
