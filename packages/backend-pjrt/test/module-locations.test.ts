import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import type { ModuleSource } from "@xlaserve/core";
import { type PjrtBackend, createPjrtBackend } from "../src/backend.ts";
import { withUnknownLocations } from "../src/module-locations.ts";
import { buildMock } from "./support/build-mock.ts";

const text = (s: string): ModuleSource => ({ bytes: new TextEncoder().encode(s), format: "text", origin: "m.mlir" });
const decode = (m: ModuleSource) => new TextDecoder().decode(m.bytes);

const WITH_LOCATIONS = [
  "#loc = loc(unknown)",
  '#loc1 = loc("args[0]")',
  "module @m {",
  '  func.func public @main(%arg0: tensor<2xf32> loc("args[0]")) -> tensor<2xf32> {',
  '    %0 = stablehlo.custom_call @f(%arg0) {backend_config = "#loc9 = loc(x)"} : (tensor<2xf32>) -> tensor<2xf32> loc(#loc3)',
  "    return %0 : tensor<2xf32> loc(#loc)",
  "  } loc(#loc)",
  "} loc(#loc)",
  '#loc2 = loc("model.py":12:4 to :30)',
  '#loc3 = loc("jit(f)/relu"(callsite(#loc2 at "lib.py":7:1)))',
  "#loc4 = loc(fused[#loc2, #loc3])",
  "",
].join("\n");

describe("withUnknownLocations", () => {
  test("every location alias becomes loc(unknown); every other line is kept byte for byte", () => {
    const out = decode(withUnknownLocations(text(WITH_LOCATIONS))).split("\n");
    const before = WITH_LOCATIONS.split("\n");
    expect(out.length).toBe(before.length);
    for (let i = 0; i < before.length; i++) {
      const alias = /^(#loc\d*) = loc\(/.exec(before[i]!);
      expect(out[i]).toBe(alias ? `${alias[1]} = loc(unknown)` : before[i]);
    }
    // a string attribute that happens to read like an alias is not a line of its own: untouched
    expect(out[4]).toContain('"#loc9 = loc(x)"');
  });

  test("the exported example modules keep every alias defined and every use in place", () => {
    const dir = resolve(import.meta.dir, "../../../examples/models");
    for (const file of ["mlp/model.b1.mlir", "cnn/model.b4.mlir", "transformer/model.b1.mlir"]) {
      const original = readFileSync(resolve(dir, file), "utf8");
      const stripped = decode(withUnknownLocations(text(original)));
      const defined = (s: string) => [...s.matchAll(/^(#loc\w*) = /gm)].map((m) => m[1]);
      expect(defined(stripped)).toEqual(defined(original));
      expect(defined(original).length).toBeGreaterThan(10);
      expect(stripped.match(/^#loc\w* = loc\((?!unknown\)$).*$/gm)).toBeNull();
      const body = (s: string) => s.split("\n").filter((l) => !l.startsWith("#loc"));
      expect(body(stripped)).toEqual(body(original));
      expect(stripped.length).toBeLessThan(original.length);
    }
  });

  test("bytecode, and text without aliases, come back as the same object", () => {
    const bytecode: ModuleSource = { bytes: new Uint8Array([0x4d, 0x4c, 0xef, 0x52, 1, 2]), format: "bytecode" };
    expect(withUnknownLocations(bytecode)).toBe(bytecode);
    const plain = text("module @m { func.func @main() }");
    expect(withUnknownLocations(plain)).toBe(plain);
    const already = text("#loc = loc(unknown)\nmodule @m {} loc(#loc)\n");
    expect(withUnknownLocations(already)).toBe(already);
  });
});

describe("the PJRT backend compiles modules with unknown locations unless asked to keep them", () => {
  let backend: PjrtBackend;
  beforeAll(() => {
    backend = createPjrtBackend({ pluginPath: buildMock("ok"), isolateCompile: false });
  });
  afterAll(async () => {
    await backend.dispose();
  });
  // The mock's serialized program is "MOCKEXEC:" followed by the module bytes it was given.
  const compiledText = async (b: PjrtBackend, keepLocations?: boolean) =>
    new TextDecoder().decode((await b.serialize(await b.compile(text(WITH_LOCATIONS), { keepLocations }))).subarray(9));

  test("in process", async () => {
    expect(await compiledText(backend)).toBe(decode(withUnknownLocations(text(WITH_LOCATIONS))));
    expect(await compiledText(backend, true)).toBe(WITH_LOCATIONS);
  });

  test("in the compile child", async () => {
    const isolated = createPjrtBackend({ pluginPath: buildMock("ok"), isolateCompile: true });
    try {
      expect(await compiledText(isolated)).toBe(decode(withUnknownLocations(text(WITH_LOCATIONS))));
      expect(await compiledText(isolated, true)).toBe(WITH_LOCATIONS);
    } finally {
      await isolated.dispose();
    }
  });
});

describe("withUnknownLocations keeps what it does not rewrite byte for byte", () => {
  test("bytes that are not UTF-8, a byte-order mark and CRLF line endings survive", () => {
    const head = new Uint8Array([0xef, 0xbb, 0xbf, ...new TextEncoder().encode("// m\r\n")]);
    const body = new TextEncoder().encode('#loc1 = loc("a.py":1:2)\r\nmodule @m {\r\n  %s = "x');
    const tail = new TextEncoder().encode('" loc(#loc1)\r\n} loc(#loc1)\r\n');
    const bytes = new Uint8Array([...head, ...body, 0xff, 0xfe, ...tail]);
    const out = withUnknownLocations({ bytes, format: "text" }).bytes;
    const expected = new Uint8Array([
      ...head,
      ...new TextEncoder().encode('#loc1 = loc(unknown)\r\nmodule @m {\r\n  %s = "x'),
      0xff,
      0xfe,
      ...tail,
    ]);
    expect(Buffer.from(out).equals(Buffer.from(expected))).toBe(true);
    const crlfUnknown = text("#loc = loc(unknown)\r\nmodule @m {} loc(#loc)\r\n");
    expect(withUnknownLocations(crlfUnknown)).toBe(crlfUnknown);
  });

  test("an alias whose value continues on the next line is left alone", () => {
    const split = '#loc5 = loc(callsite(#loc1 at\n  #loc2))\n#loc6 = loc("f.py":3:4)\n';
    expect(decode(withUnknownLocations(text(split)))).toBe(
      "#loc5 = loc(callsite(#loc1 at\n  #loc2))\n#loc6 = loc(unknown)\n",
    );
    const tricky = text('#loc7 = loc(")(" at "x")\n');
    expect(decode(withUnknownLocations(tricky))).toBe("#loc7 = loc(unknown)\n");
  });
});
