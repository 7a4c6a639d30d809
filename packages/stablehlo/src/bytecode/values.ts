/**
 * Attributes and types as the bytecode holds them, before any dialect conversion: the builtin
 * dialect's and VHLO's encodings both decode into these (VHLO's forked builtins, `array_v1`,
 * `integer_v1`, `ranked_tensor_v1`..., become the same shapes as their builtin originals).
 */

export type RawType =
  | { readonly k: "int"; readonly width: number; readonly signed: boolean; readonly signless: boolean }
  | { readonly k: "bool" }
  | { readonly k: "index" }
  /** f16, bf16, f32, f64, f8E4M3FN, f8E5M2, ..., tf32, f80, f128 */
  | { readonly k: "float"; readonly name: string; readonly bits: number }
  | { readonly k: "complex"; readonly elem: RawType }
  /** Ranked tensor; a dynamic dimension is -1. */
  | { readonly k: "tensor"; readonly shape: number[]; readonly elem: RawType; readonly encoding: RawAttr | null }
  | { readonly k: "unranked"; readonly elem: RawType }
  | { readonly k: "buffer"; readonly shape: number[]; readonly elem: RawType }
  | { readonly k: "tuple"; readonly items: RawType[] }
  | { readonly k: "function"; readonly inputs: RawType[]; readonly results: RawType[] }
  | { readonly k: "token" }
  /** `!stablehlo.future<...>`: the pending results of an asynchronous op. */
  | { readonly k: "future"; readonly items: RawType[] }
  | { readonly k: "none" }
  | { readonly k: "witness" }
  | { readonly k: "quant"; readonly text: string }
  /** Anything else (another dialect's type, or one written as assembly text). */
  | { readonly k: "opaque"; readonly text: string };

export type RawAttr =
  | { readonly k: "array"; readonly items: RawAttr[] }
  | { readonly k: "dict"; readonly entries: [string, RawAttr][] }
  | { readonly k: "string"; readonly value: string }
  | { readonly k: "symbol"; readonly root: string; readonly nested: string[] }
  | { readonly k: "type"; readonly type: RawType }
  | { readonly k: "unit" }
  | { readonly k: "bool"; readonly value: boolean }
  | { readonly k: "int"; readonly type: RawType; readonly value: bigint }
  | { readonly k: "float"; readonly type: RawType; readonly value: number }
  /** An enum of the VHLO dialect: `comparison_direction`, `precision`... and its case's number. */
  | { readonly k: "enum"; readonly enum: string; readonly value: number }
  /** Dense elements (builtin DenseIntOrFPElements or VHLO tensor_v1): raw little-endian data. */
  | { readonly k: "dense"; readonly type: RawType; readonly data: Uint8Array }
  | { readonly k: "dense_array"; readonly elem: RawType; readonly size: number; readonly data: Uint8Array }
  /** Structured VHLO attributes: output_operand_alias, type_extensions, result_accuracy. */
  | {
      readonly k: "struct";
      readonly name: string;
      readonly fields: Readonly<Record<string, RawAttr | number | number[]>>;
    }
  | { readonly k: "loc" }
  | { readonly k: "opaque"; readonly text: string };
