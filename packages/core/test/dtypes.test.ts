import { describe, expect, test } from "bun:test";
import {
  DTYPES,
  bf16BitsToNumber,
  bytesAsTyped,
  dtypeFromKserve,
  dtypeFromMlir,
  dtypeFromSafetensors,
  dtypeInfo,
  dtypeSize,
  f16BitsToNumber,
  kserveName,
  numberToBf16Bits,
  numberToF16Bits,
} from "../src/index.ts";

describe("dtype tables", () => {
  test("every dtype maps to and from its safetensors and MLIR names", () => {
    for (const dtype of DTYPES) {
      const info = dtypeInfo(dtype);
      expect(dtypeFromSafetensors(info.safetensors)).toBe(dtype);
      expect(dtypeFromMlir(info.mlir)).toBe(dtype);
      if (info.kserve) expect(dtypeFromKserve(info.kserve)).toBe(dtype);
    }
  });

  test("sizes and KServe names", () => {
    expect(dtypeSize("bool")).toBe(1);
    expect(dtypeSize("bf16")).toBe(2);
    expect(dtypeSize("f64")).toBe(8);
    expect(kserveName("f16")).toBe("FP16");
    expect(kserveName("u64")).toBe("UINT64");
    expect(() => kserveName("f8_e4m3")).toThrow(TypeError);
    expect(dtypeInfo("f8_e5m2").clientVisible).toBe(false);
  });

  test("bytesAsTyped views aligned bytes and copies misaligned ones", () => {
    const backing = new Uint8Array(12);
    new DataView(backing.buffer).setFloat32(4, 1.5, true);
    const aligned = bytesAsTyped("f32", backing.subarray(4, 8));
    expect(aligned.buffer).toBe(backing.buffer);
    expect(aligned[0]).toBe(1.5);
    const shifted = new Uint8Array(12);
    shifted.set(backing.subarray(4, 8), 1);
    const copy = bytesAsTyped("f32", shifted.subarray(1, 5));
    expect(copy.buffer).not.toBe(shifted.buffer);
    expect(copy[0]).toBe(1.5);
    expect(() => bytesAsTyped("f32", backing.subarray(0, 3))).toThrow(RangeError);
  });
});

describe("f16", () => {
  test("every non-NaN bit pattern survives bits -> number -> bits", () => {
    for (let bits = 0; bits < 0x10000; bits++) {
      const value = f16BitsToNumber(bits);
      if (Number.isNaN(value)) continue;
      expect(numberToF16Bits(value)).toBe(bits);
    }
  });

  test("ties round to even", () => {
    expect(numberToF16Bits(1 + 2 ** -11)).toBe(0x3c00); // halfway 1 .. 1+ulp: even is 1
    expect(numberToF16Bits(1 + 3 * 2 ** -11)).toBe(0x3c02); // halfway odd .. even: up
    expect(numberToF16Bits(1 + 2 ** -11 + 2 ** -30)).toBe(0x3c01); // just above halfway: up
  });

  test("overflow, infinities and NaN", () => {
    expect(numberToF16Bits(65504)).toBe(0x7bff);
    expect(numberToF16Bits(65519.99)).toBe(0x7bff);
    expect(numberToF16Bits(65520)).toBe(0x7c00); // halfway to 2^16 rounds to even: infinity
    expect(numberToF16Bits(Number.POSITIVE_INFINITY)).toBe(0x7c00);
    expect(numberToF16Bits(Number.NEGATIVE_INFINITY)).toBe(0xfc00);
    expect(f16BitsToNumber(0xfc00)).toBe(Number.NEGATIVE_INFINITY);
    expect(numberToF16Bits(Number.NaN) & 0x7e00).toBe(0x7e00);
    expect(Number.isNaN(f16BitsToNumber(0x7c01))).toBe(true);
    expect(numberToF16Bits(-0)).toBe(0x8000);
  });

  test("subnormals", () => {
    expect(f16BitsToNumber(0x0001)).toBe(2 ** -24);
    expect(f16BitsToNumber(0x03ff)).toBe(1023 * 2 ** -24);
    expect(numberToF16Bits(2 ** -24)).toBe(0x0001);
    expect(numberToF16Bits(2 ** -25)).toBe(0x0000); // halfway to the smallest subnormal: even is 0
    expect(numberToF16Bits(2 ** -25 * 1.0001)).toBe(0x0001);
    expect(numberToF16Bits(3 * 2 ** -25)).toBe(0x0002); // halfway 1 .. 2 units: even is 2
    expect(numberToF16Bits(1023.5 * 2 ** -24)).toBe(0x0400); // rounds up into the smallest normal
    expect(numberToF16Bits(-(2 ** -30))).toBe(0x8000);
  });
});

describe("bf16", () => {
  test("every non-NaN bit pattern survives bits -> number -> bits", () => {
    for (let bits = 0; bits < 0x10000; bits++) {
      const value = bf16BitsToNumber(bits);
      if (Number.isNaN(value)) continue;
      expect(numberToBf16Bits(value)).toBe(bits);
    }
  });

  test("ties round to even, overflow to infinity, NaN stays quiet NaN with its sign", () => {
    expect(numberToBf16Bits(1)).toBe(0x3f80);
    expect(numberToBf16Bits(1 + 2 ** -8)).toBe(0x3f80);
    expect(numberToBf16Bits(1 + 3 * 2 ** -8)).toBe(0x3f82);
    expect(numberToBf16Bits(3.4028234663852886e38)).toBe(0x7f80);
    expect(numberToBf16Bits(Number.NEGATIVE_INFINITY)).toBe(0xff80);
    const nan = numberToBf16Bits(Number.NaN);
    expect(Number.isNaN(bf16BitsToNumber(nan))).toBe(true);
    expect(nan & 0x0040).toBe(0x0040);
    expect(bf16BitsToNumber(0x0001)).toBe(2 ** -133); // smallest subnormal
    expect(numberToBf16Bits(2 ** -133)).toBe(0x0001);
  });
});
