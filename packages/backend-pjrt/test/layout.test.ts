import { describe, expect, test } from "bun:test";
import { C, layoutStruct, layoutUnion } from "../src/abi/ctypes.ts";
import { LAYOUT_0_113, VERIFIED_LAYOUTS } from "../src/abi/slots.ts";
import {
  ALL_STRUCTS,
  PJRT_Api_Version,
  PJRT_Client_BufferFromHostBuffer_Args,
  PJRT_Client_Create_Args,
  PJRT_Device_MemoryStats_Args,
  PJRT_ExecuteOptions,
  PJRT_NamedValue,
  PJRT_NamedValue_Union,
  PJRT_Plugin_Initialize_Args,
} from "../src/abi/structs.ts";
import { buildMock, mockControls } from "./support/build-mock.ts";

describe("C layout rules (x86-64 SysV)", () => {
  test("fields align to their size and the struct pads to its strictest member", () => {
    const s = layoutStruct("s", [
      ["a", C.u8],
      ["b", C.i64],
      ["c", C.int],
      ["d", C.bool],
    ]);
    expect(s.fields.map((f) => f.offset)).toEqual([0, 8, 16, 20]);
    expect(s.size).toBe(24);
    expect(s.align).toBe(8);
  });

  test("a union is as large as its largest member", () => {
    const u = layoutUnion("u", [
      ["f", C.float],
      ["p", C.ptr],
      ["b", C.bool],
    ]);
    expect(u.size).toBe(8);
    expect(u.fields.every((f) => f.offset === 0)).toBe(true);
  });

  test("duplicate field names are refused", () => {
    expect(() =>
      layoutStruct("s", [
        ["a", C.int],
        ["a", C.int],
      ]),
    ).toThrow(/twice/);
  });
});

describe("PJRT layouts against the header's facts", () => {
  test("the 0.113 table has 138 slots and PJRT_Api_STRUCT_SIZE 1144", () => {
    expect(LAYOUT_0_113.slots.length).toBe(138);
    expect(new Set(LAYOUT_0_113.slots).size).toBe(138);
    expect(LAYOUT_0_113.table.structSize).toBe(1144);
    expect(LAYOUT_0_113.table.field("pjrt_api_version").offset).toBe(16);
    expect(LAYOUT_0_113.table.field("PJRT_Error_Destroy").offset).toBe(40);
    expect(LAYOUT_0_113.table.field("PJRT_TopologyDescription_GetMemorySpaceKindIds").offset).toBe(1136);
  });

  test("every verified (minor, struct_size) pair fits its layout exactly", () => {
    for (const v of VERIFIED_LAYOUTS) expect(v.structSize).toBe(v.layout.table.structSize);
  });

  test("struct_size is offsetof(last) + sizeof(last), without tail padding", () => {
    expect(PJRT_Api_Version.structSize).toBe(24);
    expect(PJRT_Plugin_Initialize_Args.structSize).toBe(16);
    // bool last: sizeof pads to 24, PJRT_STRUCT_SIZE does not.
    expect(PJRT_NamedValue_Union.size).toBe(8);
    expect(PJRT_NamedValue.size).toBe(56);
    expect(PJRT_NamedValue.structSize).toBe(56);
    expect(PJRT_NamedValue.field("value").offset).toBe(40);
    expect(PJRT_Client_Create_Args.structSize).toBe(88);
    expect(PJRT_Client_BufferFromHostBuffer_Args.structSize).toBe(120);
    expect(PJRT_Client_BufferFromHostBuffer_Args.field("host_buffer_semantics").offset).toBe(72);
    expect(PJRT_Device_MemoryStats_Args.structSize).toBe(201);
    expect(PJRT_Device_MemoryStats_Args.size).toBe(208);
    expect(PJRT_ExecuteOptions.field("use_major_to_minor_data_layout_for_callbacks").offset).toBe(120);
    expect(PJRT_ExecuteOptions.structSize).toBe(144);
  });

  test("the C compiler lays out every declared struct as computed here", () => {
    const controls = mockControls(buildMock("ok"));
    const reported = new Map<string, number>();
    for (const entry of controls.layout().split(";")) {
      const [key, value] = entry.split("=");
      if (key && value) reported.set(key, Number(value));
    }
    let checked = 0;
    for (const def of [...ALL_STRUCTS, LAYOUT_0_113.table]) {
      expect(reported.get(`${def.name}.#size`)).toBe(def.size);
      for (const f of def.layout.fields) {
        expect({ field: `${def.name}.${f.name}`, offset: reported.get(`${def.name}.${f.name}`) }).toEqual({
          field: `${def.name}.${f.name}`,
          offset: f.offset,
        });
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(300);
  });
});
