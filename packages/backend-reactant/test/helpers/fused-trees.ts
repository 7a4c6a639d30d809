/** An LSTM cell's gates: slices of one wide row, read in place by the loop ("g" leaves). */
export function slicedTree(t: string, rows: number, cols: number): string {
  const T = `tensor<${rows}x${cols}x${t}>`;
  const W = `tensor<${rows}x${4 * cols}x${t}>`;
  const cut = (k: number) => `stablehlo.slice %w [0:${rows}, ${k * cols}:${(k + 1) * cols}] : (${W}) -> ${T}`;
  return `func.func @main(%x: ${T}, %y: ${T}, %r: tensor<${cols}x${t}>, %c: tensor<${rows}x${t}>, %s: tensor<${t}>) -> ${T} {
    %w = stablehlo.concatenate %x, %y, %y, %x, dim = 1 : (${T}, ${T}, ${T}, ${T}) -> ${W}
    %i = ${cut(0)}
    %f = ${cut(1)}
    %g = ${cut(2)}
    %o = ${cut(3)}
    %0 = stablehlo.logistic %i : ${T}
    %1 = stablehlo.tanh %g : ${T}
    %2 = stablehlo.multiply %0, %1 : ${T}
    %3 = stablehlo.logistic %f : ${T}
    %4 = stablehlo.multiply %3, %y : ${T}
    %5 = stablehlo.add %4, %2 : ${T}
    %6 = stablehlo.tanh %5 : ${T}
    %7 = stablehlo.negate %o : ${T}
    %8 = stablehlo.exponential %7 : ${T}
    %9 = stablehlo.multiply %8, %6 : ${T}
    return %9 : ${T}
  }`;
}
