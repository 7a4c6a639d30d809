import type { NDArray } from "../../src/array.ts";
import { parseModule } from "@xlaserve/stablehlo";
import { Arena } from "../../src/plan/arena.ts";
import { Program } from "../../src/plan/program.ts";

/** Compiles a module's @main and runs it on the given arguments. */
export function run(text: string, args: NDArray[] = [], arena = new Arena()): NDArray[] {
  const program = new Program(parseModule(text, "test.mlir"));
  return program.func("main").invoke(args, { arena, failures: [] }) as NDArray[];
}

/** `@main` returning one op applied to constants: `body` uses %a, %b... defined from `consts`. */
export function runOp(consts: string[], body: string, resultType: string): NDArray {
  const names = "abcdefgh";
  const lines = consts.map((c, i) => `    %${names[i]} = stablehlo.constant ${c}`);
  const text = `func.func @main() -> ${resultType} {\n${lines.join("\n")}\n    %r = ${body}\n    return %r : ${resultType}\n  }`;
  return run(text)[0] as NDArray;
}

export function values(a: NDArray): (number | bigint)[] {
  return Array.from(a.data as ArrayLike<number | bigint>);
}
