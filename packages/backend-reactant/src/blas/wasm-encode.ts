/**
 * The few pieces of the WebAssembly binary format that the SIMD small GEMM (simd-gemm-module.ts)
 * is written in: LEB128 numbers, sections, and the opcodes it uses. Writing the bytes here
 * keeps the engine free of a build step and of a binary blob: the module is generated, like the
 * engine's JavaScript loops, when first needed.
 */

export function u32(value: number): number[] {
  const out: number[] = [];
  let v = value >>> 0;
  do {
    let byte = v & 0x7f;
    v >>>= 7;
    if (v !== 0) byte |= 0x80;
    out.push(byte);
  } while (v !== 0);
  return out;
}

function s32(value: number): number[] {
  const out: number[] = [];
  let v = value | 0;
  for (;;) {
    const byte = v & 0x7f;
    v >>= 7;
    const done = (v === 0 && (byte & 0x40) === 0) || (v === -1 && (byte & 0x40) !== 0);
    out.push(done ? byte : byte | 0x80);
    if (done) return out;
  }
}

/** A length-prefixed vector of already-encoded items. */
export function vec(items: number[][]): number[] {
  return [...u32(items.length), ...items.flat()];
}

export function section(id: number, body: number[]): number[] {
  return [id, ...u32(body.length), ...body];
}

export function name(text: string): number[] {
  const bytes = [...new TextEncoder().encode(text)];
  return [...u32(bytes.length), ...bytes];
}

export const I32 = 0x7f;
export const V128 = 0x7b;

/** One exported function of a module: its name, how many i32 parameters it takes (it returns nothing), its body. */
export interface ExportedFunction {
  readonly name: string;
  readonly i32Params: number;
  readonly body: number[];
}

/**
 * A module that owns its memory (`pages` 64 KiB pages to start, exported as `memory`) and exports
 * `functions` by name, in order; functions with the same parameter count share one type.
 */
export function memoryModule(pages: number, functions: readonly ExportedFunction[]): Uint8Array<ArrayBuffer> {
  const arities = [...new Set(functions.map((f) => f.i32Params))];
  const types = arities.map((n) => [0x60, ...vec(Array.from({ length: n }, () => [I32])), ...vec([])]);
  const bytes = [
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    ...section(1, vec(types)),
    ...section(3, vec(functions.map((f) => u32(arities.indexOf(f.i32Params))))),
    ...section(5, vec([[0x00, ...u32(pages)]])),
    ...section(7, vec([[...name("memory"), 0x02, 0], ...functions.map((f, i) => [...name(f.name), 0x00, ...u32(i)])])),
    ...section(10, vec(functions.map((f) => [...u32(f.body.length), ...f.body]))),
  ];
  return new Uint8Array(bytes);
}

/** Plain opcodes. */
export const op = {
  block: [0x02, 0x40],
  loop: [0x03, 0x40],
  if: [0x04, 0x40],
  else: [0x05],
  end: [0x0b],
  br: (depth: number) => [0x0c, ...u32(depth)],
  brIf: (depth: number) => [0x0d, ...u32(depth)],
  get: (local: number) => [0x20, ...u32(local)],
  set: (local: number) => [0x21, ...u32(local)],
  i32: (value: number) => [0x41, ...s32(value)],
  i32Add: [0x6a],
  i32Sub: [0x6b],
  i32Mul: [0x6c],
  i32GeU: [0x4f],
  i32GtU: [0x4b],
  i32LtS: [0x48],
  i32GeS: [0x4e],
  i32DivU: [0x6e],
  i32And: [0x71],
  i32Load: (offset = 0) => [0x28, 2, ...u32(offset)],
  f32Load: (offset = 0) => [0x2a, 2, ...u32(offset)],
  f64Load: (offset = 0) => [0x2b, 3, ...u32(offset)],
  f32Store: (offset = 0) => [0x38, 2, ...u32(offset)],
  f64Store: (offset = 0) => [0x39, 3, ...u32(offset)],
} as const;

const simd = (code: number, ...immediates: number[]) => [0xfd, ...u32(code), ...immediates];

/** SIMD opcodes (prefix 0xfd); loads and stores take a byte offset and assume no alignment. */
export const v128 = {
  load: (offset = 0) => simd(0x00, 0, ...u32(offset)),
  store: (offset = 0) => simd(0x0b, 0, ...u32(offset)),
  const: (bytes: readonly number[]) => simd(0x0c, ...bytes),
  bitselect: simd(0x52),
  f32x4Splat: simd(0x13),
  f64x2Splat: simd(0x14),
  f32x4Eq: simd(0x41),
  f64x2Eq: simd(0x47),
  f32x4Add: simd(0xe4),
  f32x4Mul: simd(0xe6),
  f64x2Add: simd(0xf0),
  f64x2Mul: simd(0xf2),
} as const;

/** local += the i32 that `value` pushes. */
export function addTo(local: number, value: number[]): number[] {
  return [...op.get(local), ...value, ...op.i32Add, ...op.set(local)];
}

/** `while (counter < limit) body`, unsigned; `body` moves the counter on. */
export function whileBelow(counter: number, limit: number, body: number[]): number[] {
  return [
    ...op.block,
    ...op.loop,
    ...op.get(counter),
    ...op.get(limit),
    ...op.i32GeU,
    ...op.brIf(1),
    ...body,
    ...op.br(0),
    ...op.end,
    ...op.end,
  ];
}

/** `for (counter = from; counter < limit; counter++) body`. */
export function countUp(counter: number, from: number, limit: number, body: number[]): number[] {
  return [...op.i32(from), ...op.set(counter), ...whileBelow(counter, limit, [...body, ...addTo(counter, op.i32(1))])];
}
