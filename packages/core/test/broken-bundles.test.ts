import { afterAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type ErrorCode, XlaserveError, loadBundle } from "../src/index.ts";
import {
  editMain,
  editText,
  readSafetensorsParts,
  refreshWeightsHash,
  tempRepository,
  writeSafetensorsParts,
} from "./helpers/bundles.ts";

/**
 * One deliberately broken bundle per rule: each case copies a real example into a temp dir,
 * breaks exactly one thing, and checks the error's code and that it names bundle, file and field.
 */

interface BrokenCase {
  readonly rule: string;
  readonly example: "mlp" | "cnn" | "transformer";
  /** Directory name of the copy (defaults to the example's name). */
  readonly as?: string;
  readonly breakIt: (dir: string) => void;
  readonly code: ErrorCode;
  readonly file: string;
  /** The exact field path the error must name ("" for whole-file problems). */
  readonly field: string;
  /** A phrase the message must contain, so a different failure cannot pass the case. */
  readonly says: RegExp;
  readonly tensor?: string;
}

const manifest = (dir: string) => join(dir, "manifest.yaml");
const weights = (dir: string) => join(dir, "weights.safetensors");
const MLP_INPUT = 'shape: "cn"\n    dims:\n      c: 64';

function editManifest(dir: string, from: string | RegExp, to: string) {
  editText(manifest(dir), (text) => text.replace(from, to));
}

interface HeaderEntry {
  dtype: string;
  shape: number[];
  data_offsets: number[];
}

/** A weights header as tests edit it: tensor entries by name plus the metadata strings. */
interface EditableHeader {
  entry(name: string): HeaderEntry;
  metadata: Record<string, string>;
}

function editWeightsHeader(dir: string, edit: (header: EditableHeader) => void) {
  const parts = readSafetensorsParts(weights(dir));
  const raw = parts.header;
  edit({
    entry: (name) => {
      const found = raw[name];
      if (!found) throw new Error(`the example has no tensor ${name}`);
      return found as HeaderEntry;
    },
    metadata: raw.__metadata__ as Record<string, string>,
  });
  writeSafetensorsParts(weights(dir), parts);
  // A consistent new file, as an exporter writes it: the case is about what the header says.
  refreshWeightsHash(dir);
}

function argumentOrder(header: EditableHeader): string[] {
  return JSON.parse(header.metadata.argument_order ?? "[]");
}

function setArgumentOrder(header: EditableHeader, names: string[]) {
  header.metadata.argument_order = JSON.stringify(names);
}

const cases: BrokenCase[] = [
  {
    rule: "unsupported format_version",
    example: "mlp",
    breakIt: (d) => editManifest(d, 'format_version: "2.0"', 'format_version: "3.0"'),
    code: "BUNDLE_INVALID",
    file: "manifest.yaml",
    field: "format_version",
    says: /unsupported format_version "3.0"/,
  },
  {
    rule: "manifest name differs from the directory name",
    example: "mlp",
    as: "classifier",
    breakIt: () => {},
    code: "BUNDLE_INVALID",
    file: "manifest.yaml",
    field: "name",
    says: /name "mlp" does not match the bundle directory name "classifier"/,
  },
  {
    rule: "invalid YAML",
    example: "mlp",
    breakIt: (d) => editManifest(d, "executable_inputs:", "executable_inputs: [\n  oops: :"),
    code: "BUNDLE_INVALID",
    file: "manifest.yaml",
    field: "",
    says: /not valid YAML/,
  },
  {
    rule: "manifest is not a mapping",
    example: "mlp",
    breakIt: (d) => writeFileSync(manifest(d), "- just\n- a list\n"),
    code: "BUNDLE_INVALID",
    file: "manifest.yaml",
    field: "",
    says: /must be a mapping at the top level/,
  },
  {
    rule: "kind: meta needs Julia",
    example: "mlp",
    breakIt: (d) => editManifest(d, 'name: "mlp"', 'name: "mlp"\nkind: "meta"'),
    code: "UNSUPPORTED",
    file: "manifest.yaml",
    field: "kind",
    says: /meta bundles are Julia workflows/,
  },
  {
    rule: "duplicate tensor name in a section",
    example: "mlp",
    breakIt: (d) => editManifest(d, 'name: "probabilities"', 'name: "logits"'),
    code: "BUNDLE_INVALID",
    file: "manifest.yaml",
    field: "executable_outputs[1].name",
    says: /duplicate tensor name "logits"/,
  },
  {
    rule: "unknown dtype token",
    example: "mlp",
    breakIt: (d) => editManifest(d, 'dtype: "f32"', 'dtype: "float32"'),
    code: "BUNDLE_INVALID",
    file: "manifest.yaml",
    field: 'executable_inputs[0] ("features").dtype',
    says: /unknown dtype "float32"/,
  },
  {
    rule: "duplicate letter in a shape",
    example: "mlp",
    breakIt: (d) => editManifest(d, MLP_INPUT, 'shape: "ccn"\n    dims:\n      c: 64'),
    code: "BUNDLE_INVALID",
    file: "manifest.yaml",
    field: 'executable_inputs[0] ("features").shape',
    says: /uses the letter "c" twice/,
  },
  {
    rule: "non-letter axis",
    example: "mlp",
    breakIt: (d) => editManifest(d, MLP_INPUT, 'shape: "c_n"\n    dims:\n      c: 64'),
    code: "BUNDLE_INVALID",
    file: "manifest.yaml",
    field: 'executable_inputs[0] ("features").shape',
    says: /"_", which is not an ASCII letter/,
  },
  {
    rule: "two batch letters",
    example: "mlp",
    breakIt: (d) => editManifest(d, MLP_INPUT, 'shape: "cbn"\n    dims:\n      c: 64'),
    code: "BUNDLE_INVALID",
    file: "manifest.yaml",
    field: 'executable_inputs[0] ("features").shape',
    says: /2 batch axes \(b, n\)/,
  },
  {
    rule: "a letter without a dim",
    example: "cnn",
    breakIt: (d) => editManifest(d, "      e: 3\n", ""),
    code: "BUNDLE_INVALID",
    file: "manifest.yaml",
    field: 'executable_inputs[0] ("image").dims',
    says: /uses "e" but dims gives no size for it/,
  },
  {
    rule: "orphan dim",
    example: "mlp",
    breakIt: (d) => editManifest(d, MLP_INPUT, `${MLP_INPUT}\n      z: 5`),
    code: "BUNDLE_INVALID",
    file: "manifest.yaml",
    field: 'executable_inputs[0] ("features").dims.z',
    says: /dims has "z", which is not a letter of shape "cn"/,
  },
  {
    rule: "dim 0",
    example: "cnn",
    breakIt: (d) => editManifest(d, "      c: 32", "      c: 0"),
    code: "BUNDLE_INVALID",
    file: "manifest.yaml",
    field: 'executable_inputs[0] ("image").dims.c',
    says: /size 0 is invalid: must be > 0, or -1/,
  },
  {
    rule: "a size for the batch letter",
    example: "mlp",
    breakIt: (d) => editManifest(d, MLP_INPUT, `${MLP_INPUT}\n      n: 8`),
    code: "BUNDLE_INVALID",
    file: "manifest.yaml",
    field: 'executable_inputs[0] ("features").dims.n',
    says: /reserved for the batch axis/,
  },
  {
    rule: "non-positive compiled batch size",
    example: "mlp",
    breakIt: (d) => editManifest(d, "    - 1\n", "    - 0\n"),
    code: "BUNDLE_INVALID",
    file: "manifest.yaml",
    field: "batching.compiled_batch_sizes[0]",
    says: /positive integers, found number 0/,
  },
  {
    rule: "repeated compiled batch size",
    example: "mlp",
    breakIt: (d) => editManifest(d, "    - 8\n", "    - 1\n"),
    code: "BUNDLE_INVALID",
    file: "manifest.yaml",
    field: "batching.compiled_batch_sizes[1]",
    says: /batch size 1 is listed twice/,
  },
  {
    rule: "batched and unbatched executable inputs mixed",
    example: "mlp",
    breakIt: (d) =>
      editManifest(
        d,
        "executable_outputs:",
        '  - name: "mask"\n    dtype: "f32"\n    shape: "c"\n    dims:\n      c: 64\nexecutable_outputs:',
      ),
    code: "BUNDLE_INVALID",
    file: "manifest.yaml",
    field: "executable_inputs",
    says: /mixes batched and unbatched inputs.*"mask"/,
  },
  {
    rule: "client_inputs without model.jl",
    example: "mlp",
    breakIt: (d) =>
      editText(
        manifest(d),
        (t) => `${t}client_inputs:\n  - name: "text"\n    dtype: "u8"\n    shape: "cn"\n    dims:\n      c: 128\n`,
      ),
    code: "BUNDLE_INVALID",
    file: "manifest.yaml",
    field: "client_inputs",
    says: /only allowed when the bundle has a model.jl/,
  },
  {
    rule: "f8 dtype on a client-facing tensor",
    example: "mlp",
    breakIt: (d) => editManifest(d, /(name: "logits"\n\s+dtype: )"f32"/, '$1"f8_e4m3"'),
    code: "BUNDLE_INVALID",
    file: "manifest.yaml",
    field: "executable_outputs[1].dtype",
    says: /"logits" has dtype f8_e4m3, which has no KServe datatype/,
  },
  {
    rule: "variable axis without input_shapes",
    example: "mlp",
    breakIt: (d) => editManifest(d, MLP_INPUT, 'shape: "cn"\n    dims:\n      c: -1'),
    code: "BUNDLE_INVALID",
    file: "manifest.yaml",
    field: "input_shapes",
    says: /variable axes \(c = -1\) but no input_shapes/,
  },
  {
    rule: "input_shapes without a variable axis",
    example: "mlp",
    breakIt: (d) => editText(manifest(d), (t) => `${t}input_shapes:\n  - c: 64\n`),
    code: "BUNDLE_INVALID",
    file: "manifest.yaml",
    field: "input_shapes",
    says: /no executable input has a variable axis/,
  },
  {
    rule: "input_shapes variant missing a letter",
    example: "cnn",
    breakIt: (d) => {
      editManifest(d, "      c: 32\n      d: 32", "      c: -1\n      d: -1");
      editText(manifest(d), (t) => `${t}input_shapes:\n  - {c: 32, d: 32}\n  - {c: 16}\n`);
    },
    code: "BUNDLE_INVALID",
    file: "manifest.yaml",
    field: "input_shapes[1]",
    says: /no size for the variable axis "d"/,
  },
  {
    rule: "a compiled batch size without a module",
    example: "mlp",
    breakIt: (d) => rmSync(join(d, "model.b8.mlir")),
    code: "BUNDLE_INVALID",
    file: "model.b8.mlir",
    field: "batching.compiled_batch_sizes",
    says: /compiled batch size 8 has no module/,
  },
  {
    rule: "a module for an undeclared batch size",
    example: "mlp",
    breakIt: (d) => copyFileSync(join(d, "model.b8.mlir"), join(d, "model.b16.mlir")),
    code: "BUNDLE_INVALID",
    file: "model.b16.mlir",
    field: "batching.compiled_batch_sizes",
    says: /batch size 16 is not a compiled batch size \[1, 8\]/,
  },
  {
    rule: "model.mlir next to per-size modules",
    example: "mlp",
    breakIt: (d) => copyFileSync(join(d, "model.b8.mlir"), join(d, "model.mlir")),
    code: "BUNDLE_INVALID",
    file: "model.mlir",
    field: "",
    says: /ambiguous next to model.b1.mlir, model.b8.mlir/,
  },
  {
    rule: "variant module without input_shapes",
    example: "mlp",
    breakIt: (d) => copyFileSync(join(d, "model.b8.mlir"), join(d, "model.v0.b8.mlir")),
    code: "BUNDLE_INVALID",
    file: "model.v0.b8.mlir",
    field: "input_shapes",
    says: /declares no input_shapes/,
  },
  {
    rule: "missing weights.safetensors",
    example: "mlp",
    breakIt: (d) => rmSync(weights(d)),
    code: "BUNDLE_INVALID",
    file: "weights.safetensors",
    field: "",
    says: /is missing/,
  },
  {
    rule: "model.jl hooks need Julia",
    example: "mlp",
    breakIt: (d) => writeFileSync(join(d, "model.jl"), 'register_model("mlp")\n'),
    code: "UNSUPPORTED",
    file: "model.jl",
    field: "",
    says: /hooks need ReactantServer/,
  },
  {
    rule: "safetensors header length past the end of the file",
    example: "mlp",
    breakIt: (d) => writeSafetensorsParts(weights(d), readSafetensorsParts(weights(d)), 10_000_000),
    code: "WEIGHTS_CORRUPT",
    file: "weights.safetensors",
    field: "header",
    says: /header length 10000000 runs past the end of the file/,
  },
  {
    rule: "empty weights file",
    example: "mlp",
    breakIt: (d) => writeFileSync(weights(d), ""),
    code: "WEIGHTS_CORRUPT",
    file: "weights.safetensors",
    field: "header",
    says: /file is 0 bytes/,
  },
  {
    rule: "header that is not JSON",
    example: "mlp",
    breakIt: (d) => {
      const bytes = readFileSync(weights(d));
      bytes.write("{not json", 8, "utf8");
      writeFileSync(weights(d), bytes);
    },
    code: "WEIGHTS_CORRUPT",
    file: "weights.safetensors",
    field: "header",
    says: /header is not valid JSON/,
  },
  {
    rule: "unknown safetensors dtype",
    example: "mlp",
    breakIt: (d) => editWeightsHeader(d, (h) => (h.entry("fc3.bias").dtype = "F12")),
    code: "WEIGHTS_CORRUPT",
    file: "weights.safetensors",
    field: "fc3.bias.dtype",
    says: /unknown dtype "F12"/,
    tensor: "fc3.bias",
  },
  {
    rule: "negative shape",
    example: "mlp",
    breakIt: (d) => editWeightsHeader(d, (h) => (h.entry("fc3.bias").shape = [-10])),
    code: "WEIGHTS_CORRUPT",
    file: "weights.safetensors",
    field: "fc3.bias.shape",
    says: /non-negative integers/,
    tensor: "fc3.bias",
  },
  {
    rule: "overlapping data offsets",
    example: "mlp",
    breakIt: (d) =>
      editWeightsHeader(d, (h) => (h.entry("fc2.bias").data_offsets = [...h.entry("fc1.bias").data_offsets])),
    code: "WEIGHTS_CORRUPT",
    file: "weights.safetensors",
    field: "fc2.bias.data_offsets",
    says: /"fc2.bias" overlaps tensor "fc1.bias"/,
    tensor: "fc2.bias",
  },
  {
    rule: "dtype x shape differs from the byte length",
    example: "mlp",
    breakIt: (d) => editWeightsHeader(d, (h) => (h.entry("fc1.bias").shape = [255])),
    code: "WEIGHTS_CORRUPT",
    file: "weights.safetensors",
    field: "fc1.bias.data_offsets",
    says: /F32 x shape \[255\] is 1020 bytes but data_offsets \[0, 1024\] hold 1024/,
    tensor: "fc1.bias",
  },
  {
    rule: "truncated weights",
    example: "mlp",
    breakIt: (d) => {
      const path = weights(d);
      truncateSync(path, readFileSync(path).byteLength - 100);
    },
    code: "WEIGHTS_CORRUPT",
    file: "weights.safetensors",
    field: "fc3.kernel.data_offsets",
    says: /run past the data section.*truncated/,
    tensor: "fc3.kernel",
  },
  {
    rule: "trailing bytes after the last tensor",
    example: "mlp",
    breakIt: (d) => writeFileSync(weights(d), Buffer.concat([readFileSync(weights(d)), Buffer.alloc(16)])),
    code: "WEIGHTS_CORRUPT",
    file: "weights.safetensors",
    field: "data",
    says: /16 trailing bytes after the last tensor/,
  },
  {
    rule: "__metadata__ that is not a string map",
    example: "mlp",
    breakIt: (d) => editWeightsHeader(d, (h) => ((h.metadata as Record<string, unknown>).format = 3)),
    code: "WEIGHTS_CORRUPT",
    file: "weights.safetensors",
    field: "__metadata__.format",
    says: /must be a string/,
  },
  {
    rule: "argument_order names a tensor that is not in the file",
    example: "mlp",
    breakIt: (d) => editWeightsHeader(d, (h) => setArgumentOrder(h, [...argumentOrder(h), "ghost.kernel"])),
    code: "WEIGHTS_CORRUPT",
    file: "weights.safetensors",
    field: "__metadata__.argument_order",
    says: /names tensor "ghost.kernel", which is not in the file/,
    tensor: "ghost.kernel",
  },
  {
    rule: "argument_order repeats a name",
    example: "mlp",
    breakIt: (d) => editWeightsHeader(d, (h) => setArgumentOrder(h, [...argumentOrder(h), "fc1.bias"])),
    code: "WEIGHTS_CORRUPT",
    file: "weights.safetensors",
    field: "__metadata__.argument_order",
    says: /names tensor "fc1.bias" twice/,
  },
  {
    rule: "argument_order missing",
    example: "mlp",
    breakIt: (d) => editWeightsHeader(d, (h) => delete h.metadata.argument_order),
    code: "WEIGHTS_CORRUPT",
    file: "weights.safetensors",
    field: "__metadata__.argument_order",
    says: /no argument_order/,
  },
  {
    rule: "signature argument count differs",
    example: "mlp",
    breakIt: (d) => editWeightsHeader(d, (h) => setArgumentOrder(h, argumentOrder(h).slice(0, -1))),
    code: "MODULE_SIGNATURE_MISMATCH",
    file: "model.b1.mlir",
    field: "@main",
    says: /takes 7 arguments but the bundle passes 6 \(1 executable inputs \+ 5 weights/,
  },
  {
    rule: "signature input dtype differs",
    example: "mlp",
    breakIt: (d) => editMain(join(d, "model.b1.mlir"), (l) => l.replace("tensor<1x64xf32>", "tensor<1x64xf16>")),
    code: "MODULE_SIGNATURE_MISMATCH",
    file: "model.b1.mlir",
    field: "argument 0",
    says: /argument 0 \(executable input "features"\) is tensor<1x64xf16>, expected f32 \[1, 64\]/,
    tensor: "features",
  },
  {
    rule: "signature batch size differs from the file name",
    example: "cnn",
    breakIt: (d) =>
      editMain(join(d, "model.b4.mlir"), (l) => l.replace("tensor<4x32x32x3xf32>", "tensor<2x32x32x3xf32>")),
    code: "MODULE_SIGNATURE_MISMATCH",
    file: "model.b4.mlir",
    field: "argument 0",
    says: /"image"\) is tensor<2x32x32x3xf32>, expected f32 \[4, 32, 32, 3\] \(axis 0, "n"\)/,
    tensor: "image",
  },
  {
    rule: "signature weight shape differs from the safetensors entry",
    example: "transformer",
    breakIt: (d) =>
      editMain(join(d, "model.b4.mlir"), (l) => l.replace("%arg1: tensor<512x64xf32>", "%arg1: tensor<512x32xf32>")),
    code: "MODULE_SIGNATURE_MISMATCH",
    file: "model.b4.mlir",
    field: "argument 1",
    says: /argument 1 \(weight "embed"\) is tensor<512x32xf32> but weights.safetensors holds f32 \[512, 64\]/,
    tensor: "embed",
  },
  {
    rule: "signature result count differs from executable_outputs",
    example: "mlp",
    breakIt: (d) =>
      editManifest(d, / {2}- name: "logits"\n {4}dtype: "f32"\n {4}shape: "cn"\n {4}dims:\n {6}c: 10\n/, ""),
    code: "MODULE_SIGNATURE_MISMATCH",
    file: "model.b1.mlir",
    field: "results",
    says: /returns 2 results but executable_outputs lists 1/,
  },
  {
    rule: "a text module without @main",
    example: "mlp",
    breakIt: (d) => editText(join(d, "model.b8.mlir"), (t) => t.replace("@main(", "@entry(")),
    code: "MODULE_INVALID",
    file: "model.b8.mlir",
    field: "@main",
    says: /no `func.func @main/,
  },
];

describe("broken bundles are refused with a clear error", () => {
  const repo = tempRepository();
  afterAll(() => repo.dispose());

  test("there is a case for at least 15 rules", () => {
    expect(cases.length).toBeGreaterThanOrEqual(15);
  });

  for (const c of cases) {
    test(c.rule, async () => {
      const name = c.as ?? `${c.example}`;
      const dir = repo.copy(c.example, name);
      try {
        c.breakIt(dir);
        const error = await loadBundle(dir).then(
          () => null,
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(XlaserveError);
        const e = error as XlaserveError;
        expect({ code: e.code, bundle: e.details.bundle, file: e.details.file, field: e.details.field }).toEqual({
          code: c.code,
          bundle: name,
          file: c.file,
          field: c.field,
        });
        expect(e.message).toMatch(c.says);
        expect(e.message).toStartWith(`bundle "${name}", ${c.file}`);
        if (c.field) expect(e.message).toContain(c.field);
        if (c.tensor) expect(e.details.tensor).toBe(c.tensor);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }

  test("a directory without manifest.yaml is BUNDLE_NOT_FOUND", async () => {
    const dir = repo.copy("mlp", "no-manifest");
    rmSync(join(dir, "manifest.yaml"));
    await expect(loadBundle(dir)).rejects.toMatchObject({
      code: "BUNDLE_NOT_FOUND",
      details: { bundle: "no-manifest", file: "manifest.yaml" },
    });
    await expect(loadBundle(join(repo.root, "absent"))).rejects.toMatchObject({ code: "BUNDLE_NOT_FOUND" });
  });
});

describe("file-system surprises are typed errors too", () => {
  const repo = tempRepository();
  afterAll(() => repo.dispose());

  test("a directory where a module file belongs", async () => {
    const dir = repo.copy("mlp");
    rmSync(join(dir, "model.b8.mlir"));
    mkdirSync(join(dir, "model.b8.mlir"));
    await expect(loadBundle(dir)).rejects.toMatchObject({ code: "BUNDLE_INVALID", details: { bundle: "mlp" } });
  });
});
