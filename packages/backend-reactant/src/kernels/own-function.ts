/**
 * `new Function` for generated code that must not share its compiled form with other
 * generated code. JavaScriptCore caches functions made from the same source text: all of
 * them share one compiled body and one set of type profiles. A loop generated once per
 * storage class from one text therefore sees every class anyway, and its element accesses go
 * through generic stubs (an f32 strided copy ran 6-8x slower once the same text had also
 * copied i32 and u8 arrays). `tag` names what the code is specialised for (a storage class,
 * a cache key) and goes into the text as a comment, so each tag gets code of its own.
 */
export function ownFunction(tag: string, params: readonly string[], body: string): (...args: never[]) => unknown {
  return new Function(...params, `// ${tag.replace(/[\r\n]/g, " ")}\n${body}`) as (...args: never[]) => unknown;
}
