/**
 * JAX's arg-max (GT) / arg-min (LT) reduce over axis 1 of f32[rows x cols], returning the values
 * and the indices. `swapOr` writes one `or` the other way round: the same rule, but not the op
 * sequence the engine recognises, so the region itself runs.
 */
export function argReduceModule(direction: "GT" | "LT", swapOr: boolean, rows: number, cols: number): string {
  const or = swapOr ? "stablehlo.or %3, %2" : "stablehlo.or %2, %3";
  const x = `tensor<${rows}x${cols}xf32>`;
  const out = `tensor<${rows}xf32>, tensor<${rows}xi32>`;
  const f = "tensor<f32>";
  const i = "tensor<i32>";
  const compare = (id: number, dir: string, a: string, b: string, type: string, kind: string) =>
    `%${id} = stablehlo.compare ${dir}, ${a}, ${b}, ${kind} : (${type}, ${type}) -> tensor<i1>`;
  return [
    `func.func @main(%x: ${x}) -> (${out}) {`,
    `%c = stablehlo.constant dense<0> : ${i}`,
    `%cst = stablehlo.constant dense<${direction === "GT" ? "0xFF800000" : "0x7F800000"}> : ${f}`,
    `%0 = stablehlo.iota dim = 1 : tensor<${rows}x${cols}xi32>`,
    `%1:2 = stablehlo.reduce(%x init: %cst), (%0 init: %c) across dimensions = [1] : (${x}, tensor<${rows}x${cols}xi32>, ${f}, ${i}) -> (${out})`,
    ` reducer(%a: ${f}, %b: ${f}) (%ia: ${i}, %ib: ${i}) {`,
    compare(2, direction, "%a", "%b", f, "FLOAT"),
    compare(3, "NE", "%a", "%a", f, "FLOAT"),
    `%4 = ${or} : tensor<i1>`,
    compare(5, "EQ", "%a", "%b", f, "FLOAT"),
    compare(6, "LT", "%ia", "%ib", i, "SIGNED"),
    "%7 = stablehlo.and %5, %6 : tensor<i1>",
    "%8 = stablehlo.or %4, %7 : tensor<i1>",
    `%9 = stablehlo.select %4, %a, %b : tensor<i1>, ${f}`,
    `%10 = stablehlo.select %8, %ia, %ib : tensor<i1>, ${i}`,
    `stablehlo.return %9, %10 : ${f}, ${i}`,
    "}",
    `return %1#0, %1#1 : ${out}`,
    "}",
  ].join("\n");
}
