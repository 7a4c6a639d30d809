import { describe, expect, test } from "bun:test";
import { compileOptionsProto } from "../src/compile-options.ts";
import { ProtoWriter } from "../src/protobuf.ts";

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");

describe("protobuf writer", () => {
  test("varints, negative int64 as ten bytes, strings and nested messages", () => {
    expect(hex(new ProtoWriter().int(1, 300).finish())).toBe("08ac02");
    expect(hex(new ProtoWriter().int(1, -1).finish())).toBe("08ffffffffffffffffff01");
    expect(hex(new ProtoWriter().string(2, "hi").finish())).toBe("12026869");
    expect(hex(new ProtoWriter().message(3, (m) => m.bool(1, true)).finish())).toBe("1a020801");
    expect(hex(new ProtoWriter().double(4, 1.5).finish())).toBe("21000000000000f83f");
  });
});

describe("CompileOptionsProto", () => {
  test("default options are the 17 bytes proven on the GPU host", () => {
    const bytes = compileOptionsProto({});
    expect(bytes.byteLength).toBe(17);
    // 3: executable_build_options { 1: device_ordinal -1, 4: num_replicas 1, 5: num_partitions 1 }
    expect(hex(bytes)).toBe("1a0f08ffffffffffffffffff0120012801");
  });

  test("deterministic adds env_option_overrides, sorted by name", () => {
    const bytes = compileOptionsProto({ deterministic: true });
    const text = Buffer.from(bytes).toString("latin1");
    expect(text.indexOf("xla_gpu_autotune_level")).toBeGreaterThan(0);
    expect(text.indexOf("xla_gpu_autotune_level")).toBeLessThan(text.indexOf("xla_gpu_exclude_nondeterministic_ops"));
    // entry for autotune level 0: key, then value { 3: int_field 0 }
    expect(hex(bytes)).toContain(`${hex(new TextEncoder().encode("xla_gpu_autotune_level"))}12021800`);
  });

  test("the bytes depend only on the options", () => {
    const a = compileOptionsProto({ xlaFlags: { b: 1, a: "x" }, deterministic: false });
    const b = compileOptionsProto({ xlaFlags: { a: "x", b: 1 } });
    expect(hex(a)).toBe(hex(b));
  });
});
