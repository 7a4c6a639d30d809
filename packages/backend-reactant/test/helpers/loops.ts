/** StableHLO text of while loops shared by the loop tests. */

/** The condition `%i < %n` (signed i32) and the opening of the body, between a while's operands and its body ops. */
export const WHILE_I_BELOW_N = `cond {
    %c = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  } do {`;

/**
 * @main(%x0: tensor<T>) -> tensor<T>, a while over one scalar %x with the given condition ops
 * (ending in `stablehlo.return` of an i1) and body ops (ending in `stablehlo.return` of %x's next value).
 */
export function scalarLoop(type: string, cond: string, body: string): string {
  return `func.func @main(%x0: tensor<${type}>) -> tensor<${type}> {
  %r = stablehlo.while(%x = %x0) : tensor<${type}>
  cond {
    ${cond}
  } do {
    ${body}
  }
  return %r : tensor<${type}>
}`;
}
