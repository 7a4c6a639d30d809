import type { Pointer } from "bun:ffi";
import { NativeStruct, ownedBytes, readInt64s, readString, structArray } from "../abi/cstruct.ts";
import { PJRT_NamedValue } from "../abi/structs.ts";

/** PJRT_NamedValue_Type. */
const KIND = { string: 0, int64: 1, int64List: 2, float: 3, bool: 4 } as const;

export type NamedValue = string | number | boolean | readonly number[];

/** A typed option for the plugin; `float` is explicit because JS numbers do not say int or float. */
export type NamedOption =
  | { readonly name: string; readonly type: "string"; readonly value: string }
  | { readonly name: string; readonly type: "int64"; readonly value: number }
  | { readonly name: string; readonly type: "float"; readonly value: number }
  | { readonly name: string; readonly type: "bool"; readonly value: boolean };

/**
 * Marshals options into a C array of PJRT_NamedValue. The returned object owns every byte C
 * will read (the structs and the name/value strings); keep it alive until the call returns.
 */
export function writeNamedValues(options: readonly NamedOption[]): { address: Pointer; keep: unknown[] } {
  const array = structArray(PJRT_NamedValue, options.length);
  const keep: unknown[] = [array];
  options.forEach((option, i) => {
    const item = array.items[i];
    if (!item) return;
    const name = ownedBytes(option.name, true);
    keep.push(name);
    item.set("name", name.address).set("name_size", name.bytes.byteLength - 1);
    switch (option.type) {
      case "string": {
        const value = ownedBytes(option.value, true);
        keep.push(value);
        item.set("type", KIND.string).setUnion("value", "string_value", value.address);
        item.set("value_size", value.bytes.byteLength - 1);
        break;
      }
      case "int64":
        item.set("type", KIND.int64).setUnion("value", "int64_value", BigInt(Math.trunc(option.value)));
        item.set("value_size", 1);
        break;
      case "float":
        item.set("type", KIND.float).setUnion("value", "float_value", option.value).set("value_size", 1);
        break;
      case "bool":
        item.set("type", KIND.bool).setUnion("value", "bool_value", option.value).set("value_size", 1);
        break;
    }
  });
  return { address: array.address, keep };
}

/** Reads a plugin-owned PJRT_NamedValue array into a plain object. */
export function readNamedValues(address: number, count: number): Record<string, NamedValue> {
  const out: Record<string, NamedValue> = {};
  for (let i = 0; i < count; i++) {
    const v = new NativeStruct(PJRT_NamedValue, address + i * PJRT_NamedValue.size);
    const name = readString(v.get("name"), v.get("name_size"));
    const size = v.get("value_size");
    switch (v.get("type")) {
      case KIND.string:
        out[name] = readString(v.getUnion("value", "string_value"), size);
        break;
      case KIND.int64:
        out[name] = v.getUnion("value", "int64_value");
        break;
      case KIND.int64List:
        out[name] = readInt64s(v.getUnion("value", "int64_array_value"), size);
        break;
      case KIND.float:
        out[name] = v.getUnion("value", "float_value");
        break;
      case KIND.bool:
        out[name] = v.getUnion("value", "bool_value") !== 0;
        break;
    }
  }
  return out;
}
