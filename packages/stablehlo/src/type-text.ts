/**
 * One spelling for a type the model keeps as text (`other`), whichever reader produced it:
 * no whitespace, numbers in their shortest form, `#stablehlo.type_extensions<bounds = [..]>`
 * written as `#stablehlo.bounds<..>`.
 */
export function canonicalTypeText(text: string): string {
  return text
    .replace(/#stablehlo\.type_extensions<\s*bounds\s*=\s*\[([^\]]*)\]\s*>/g, "#stablehlo.bounds<$1>")
    .replace(/\s+/g, "")
    .replace(/[-+]?\d+\.\d*(?:[eE][-+]?\d+)?|[-+]?\d+[eE][-+]?\d+/g, (m) => String(Number(m)));
}
