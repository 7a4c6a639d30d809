import { type ElemType, type NDArray, type TypedArray, allocData, elementCount } from "../array.ts";
import { HELPERS } from "../elem/helpers.ts";
import { type Arena, dataTaker } from "../plan/arena.ts";
import { executeFailed } from "./errors.ts";
import { loadExpr, storeStmt } from "./expr.ts";

/**
 * Elementwise loops generated once per (expression, types, broadcast pattern) with
 * `new Function`, so the hot loop has no per-element closure calls or type dispatch. An input
 * with a single element is broadcast (regions evaluated over whole arrays rely on it, and
 * select / clamp allow scalar operands).
 */

/** Body builder: given the loaded operand variable names, the result expression. */
export type ExprBuilder = (args: string[]) => string;

type Loop = (inputs: TypedArray[], out: TypedArray, n: number, h: typeof HELPERS) => void;
const loopCache = new Map<string, Loop>();

/** With `arena`, the output comes from its pool (the loop writes every element). */
export type ElementwiseKernel = (inputs: NDArray[], arena?: Arena) => NDArray;

/**
 * Builds a kernel computing `expr` over inputs of `inTypes`, writing `outType`. `key` must
 * identify the expression (it keys the generated-code cache).
 */
export function makeElementwise(
  key: string,
  inTypes: ElemType[],
  outType: ElemType,
  expr: ExprBuilder,
): ElementwiseKernel {
  const loops = new Map<number, Loop>();
  const loopFor = (mask: number): Loop => {
    let loop = loops.get(mask);
    if (loop) return loop;
    const cacheKey = `${key}|${inTypes.join(",")}|${outType}|${mask}`;
    loop = loopCache.get(cacheKey);
    if (!loop) {
      loop = generate(inTypes, outType, expr, mask);
      loopCache.set(cacheKey, loop);
    }
    loops.set(mask, loop);
    return loop;
  };
  const take = dataTaker(outType);
  return (inputs: NDArray[], arena?: Arena): NDArray => {
    let shape: number[] = [];
    let n = 1;
    let mask = 0;
    let single = 0;
    const data = new Array<TypedArray>(inputs.length);
    for (let k = 0; k < inputs.length; k++) {
      const input = inputs[k] as NDArray;
      data[k] = input.data;
      const count = elementCount(input.shape);
      if (count === 1) single |= 1 << k;
      if (count !== 1 || input.shape.length > shape.length) {
        if (count !== 1 && n !== 1 && count !== n) {
          throw executeFailed(key, `operand shapes differ: [${shape}] vs [${input.shape}]`);
        }
        if (count !== 1 || n === 1) {
          shape = input.shape;
          n = count;
        }
      }
    }
    if (n !== 1) mask = single;
    const out = arena ? take(arena, n) : allocData(outType, n);
    loopFor(mask)(data, out, n, HELPERS);
    return { type: outType, shape: shape.length === 0 ? [] : [...shape], data: out };
  };
}

function generate(inTypes: ElemType[], outType: ElemType, expr: ExprBuilder, mask: number): Loop {
  return new Function("inputs", "out", "n", "H", loopSource(inTypes, outType, expr, mask)) as Loop;
}

/** The body of the loop `generate` makes (exported for the test that the types are in it). */
export function loopSource(inTypes: ElemType[], outType: ElemType, expr: ExprBuilder, mask: number): string {
  const lines: string[] = [];
  const names: string[] = [];
  inTypes.forEach((t, k) => {
    lines.push(`const I${k} = inputs[${k}];`);
    if (mask & (1 << k)) lines.push(`const s${k} = ${loadExpr(t, `I${k}`, "0")};`);
    names.push(`v${k}`);
  });
  const body: string[] = [];
  inTypes.forEach((t, k) => {
    body.push(`const v${k} = ${mask & (1 << k) ? `s${k}` : loadExpr(t, `I${k}`, "i")};`);
  });
  body.push(storeStmt(outType, "out", "i", expr(names)));
  // The types named in the text: JavaScriptCore shares one compiled body and one type profile
  // between functions of the same source, so a compare of i32 and one of f32 (the same text
  // otherwise) would each run code made for both kinds of array.
  const tag = `// ${inTypes.join(",")} -> ${outType}`;
  return `${tag}\n${lines.join("\n")}\nfor (let i = 0; i < n; i++) {\n${body.join("\n")}\n}`;
}
