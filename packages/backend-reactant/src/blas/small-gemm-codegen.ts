/**
 * Generated loops for the small GEMM (small-gemm.ts). Each C element is the k-ascending sum
 * that starts from the first product (so a -0 product stays -0) and rounds every product and
 * every partial sum to f32 (or nothing, for f64): exactly the one-element loop of smallGemm.
 * A column block computes several adjacent elements of a row side by side; their sums are
 * independent chains, so interleaving them changes no operation and no order but lets the CPU
 * overlap them, where one element at a time waits out each add's latency. A NaN result is
 * stored as the canonical quiet NaN: kept in registers, a NaN's sign and payload would depend
 * on how far the JIT optimised the loop (a value that passes through a JavaScript variable
 * boundary is canonicalised, one that stays in a register is not).
 *
 * Two forms: column blocks taking strides as arguments (one per width, for GEMM calls of any
 * shape), and a whole GEMM for one call shape with every size and stride written in as a
 * constant, which a dot_general op builds once per shape (kernels/heavy/dot-general.ts) where
 * the WebAssembly form of the same arithmetic (simd-gemm.ts) cannot run: with constant strides
 * the JIT compiles tighter, steadier code than for the parameterised blocks.
 */

type Float = Float32Array | Float64Array;

/** The names a block's source reads; each is a variable or a number literal. */
interface BlockNames {
  readonly aStart: string;
  readonly aCol: string;
  readonly bStart: string;
  readonly bRow: string;
  /** Offset of column w of the block from its first column, as an expression. */
  readonly bColumn: (w: number) => string;
  readonly cAt: string;
  readonly k: string;
}

/** Source of one column block of `width` elements (a statement block). */
function blockSource(width: number, f32: boolean, n: BlockNames): string {
  const r = (x: string) => (f32 ? `fr(${x})` : `(${x})`);
  const ws = Array.from({ length: width }, (_, w) => w);
  const at = (w: number) => (w === 0 ? "pb" : `pb + ${n.bColumn(w)}`);
  const cAt = (w: number) => (w === 0 ? n.cAt : `${n.cAt} + ${w}`);
  return `{
let pa = ${n.aStart};
let pb = ${n.bStart};
let x = a[pa];
${ws.map((w) => `let c${w} = ${r(`x * b[${at(w)}]`)};`).join("\n")}
for (let p = 1; p < ${n.k}; p++) {
  pa += ${n.aCol};
  pb += ${n.bRow};
  x = a[pa];
  ${ws.map((w) => `c${w} = ${r(`c${w} + ${r(`x * b[${at(w)}]`)}`)};`).join("\n  ")}
}
${ws.map((w) => `c[${cAt(w)}] = c${w} === c${w} ? c${w} : NaN;`).join("\n")}
}`;
}

/**
 * C[cAt + w] = sum over p < k of A[aStart + p * aCol] * B[bStart + p * bRow + w * bCol], for
 * w < width; k >= 1.
 */
export type ColumnBlock = (
  a: Float,
  b: Float,
  c: Float,
  aStart: number,
  aCol: number,
  bStart: number,
  bRow: number,
  bCol: number,
  cAt: number,
  k: number,
) => void;

/** Widest first: a row of n columns is covered greedily. */
export const BLOCK_WIDTHS = [8, 4, 2, 1] as const;

const F32_BLOCKS = new Map<number, ColumnBlock>();
const F64_BLOCKS = new Map<number, ColumnBlock>();

/** The parameterised block of one of BLOCK_WIDTHS. */
export function blockFor(width: number, f32: boolean): ColumnBlock {
  const cache = f32 ? F32_BLOCKS : F64_BLOCKS;
  let block = cache.get(width);
  if (!block) {
    const offsets = Array.from({ length: width - 1 }, (_, w) => `const o${w + 1} = ${w + 1} * bCol;`).join("\n");
    const body = blockSource(width, f32, {
      aStart: "aStart",
      aCol: "aCol",
      bStart: "bStart",
      bRow: "bRow",
      bColumn: (w) => `o${w}`,
      cAt: "cAt",
      k: "k",
    });
    const source = `const fr = Math.fround;\n${offsets}\n${body}`;
    block = new Function("a", "b", "c", "aStart", "aCol", "bStart", "bRow", "bCol", "cAt", "k", source) as ColumnBlock;
    cache.set(width, block);
  }
  return block;
}

/** The sizes and layout of one GEMM call shape (row-major, see GemmCall). */
export interface GemmShape {
  readonly m: number;
  readonly n: number;
  readonly k: number;
  readonly lda: number;
  readonly ldb: number;
  readonly ldc: number;
  readonly transA: boolean;
  readonly transB: boolean;
}

/** C = op(A) op(B) at the given element offsets, for the shape it was compiled for. */
/**
 * `bVersion`, where given, is the storage version of `b` (plan/arena.ts `version`): the same array
 * at the same offset and version holds the same values, so a kernel may keep what it copied of it.
 */
export type SmallGemmKernel = (
  a: Float,
  aOffset: number,
  b: Float,
  bOffset: number,
  c: Float,
  cOffset: number,
  bVersion?: number,
) => void;

/** Rows of up to this many columns are one block; wider rows take blocks of 8 and a remainder. */
const SINGLE_BLOCK_MAX = 12;

/** The whole overwrite-C GEMM for `shape` (k >= 1) with its sizes and strides as constants. */
export function compileSmallGemm(shape: GemmShape, f32: boolean): SmallGemmKernel {
  const { m, n, k } = shape;
  const aRow = shape.transA ? 1 : shape.lda;
  const aCol = shape.transA ? shape.lda : 1;
  const bRow = shape.transB ? 1 : shape.ldb;
  const bCol = shape.transB ? shape.ldb : 1;
  const names = (bStart: string, cAt: string): BlockNames => ({
    aStart: "aStart",
    aCol: String(aCol),
    bStart,
    bRow: String(bRow),
    bColumn: (w) => String(w * bCol),
    cAt,
    k: String(k),
  });
  let row: string;
  if (n <= SINGLE_BLOCK_MAX) row = blockSource(n, f32, names("bOffset", "cRow"));
  else {
    const full = n - (n % 8);
    row = `for (let j = 0; j < ${full}; j += 8) ${blockSource(8, f32, names(`bOffset + j * ${bCol}`, "cRow + j"))}`;
    if (n % 8 > 0) row += `\n${blockSource(n % 8, f32, names(`bOffset + ${full * bCol}`, `cRow + ${full}`))}`;
  }
  const source = `const fr = Math.fround;
for (let i = 0; i < ${m}; i++) {
const aStart = aOffset + i * ${aRow};
const cRow = cOffset + i * ${shape.ldc};
${row}
}`;
  return new Function("a", "aOffset", "b", "bOffset", "c", "cOffset", source) as SmallGemmKernel;
}
