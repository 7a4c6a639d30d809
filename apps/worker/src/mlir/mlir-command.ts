import { readFileSync } from "node:fs";
import {
  type Module,
  formatType,
  isBytecode,
  parseModule,
  portableInfo,
  printModule,
  readPortableArtifact,
} from "@xlaserve/stablehlo";

export const MLIR_HELP = `xlaserve mlir: look inside a module file (StableHLO text or a portable artifact)

Usage:
  xlaserve mlir print FILE   the module as StableHLO text (MLIR's generic op form)
  xlaserve mlir info FILE    its format, producer and versions, functions and @main signature
`;

/** Reads any module file into the program model, keeping types the CPU engine does not run. */
function readAny(path: string): { module: Module; bytes: Uint8Array } {
  const bytes = new Uint8Array(readFileSync(path));
  const module = isBytecode(bytes)
    ? readPortableArtifact(bytes, path)
    : parseModule(new TextDecoder().decode(bytes), path, { lenient: true });
  return { module, bytes };
}

function countOps(ops: Module["funcs"][number]["body"]): number {
  let n = 0;
  for (const op of ops) {
    n++;
    for (const r of op.regions) n += countOps(r.ops);
  }
  return n;
}

export function mlirInfo(path: string): string {
  const { module, bytes } = readAny(path);
  const lines = [`file: ${path} (${bytes.byteLength} bytes)`];
  if (isBytecode(bytes)) {
    const info = portableInfo(bytes, path);
    lines.push("format: portable artifact (MLIR bytecode, VHLO)");
    lines.push(`producer: ${info.producer}`);
    lines.push(`StableHLO version: ${info.stablehloVersion ?? "unknown"}`);
    lines.push(`bytecode format version: ${info.bytecodeVersion}`);
  } else {
    lines.push("format: StableHLO text");
  }
  lines.push(`module: ${module.name ? `@${module.name}` : "(unnamed)"}`);
  lines.push(`functions (${module.funcs.length}):`);
  for (const f of module.funcs) {
    lines.push(`  @${f.name} ${f.isPublic ? "public" : "private"}, ${countOps(f.body)} ops`);
  }
  const main = module.funcs.find((f) => f.name === "main");
  if (main) {
    lines.push("@main signature:");
    for (const [i, a] of main.args.entries()) lines.push(`  argument ${i}: ${formatType(a.type)}`);
    for (const [i, t] of main.resultTypes.entries()) lines.push(`  result ${i}: ${formatType(t)}`);
  } else {
    lines.push("@main: none");
  }
  return `${lines.join("\n")}\n`;
}

export function mlirPrint(path: string): string {
  return printModule(readAny(path).module);
}

/** `xlaserve mlir print|info FILE`: 0, 1 for an unreadable file, 2 for a usage error. */
export function runMlir(sub: string | undefined, file: string | undefined): number {
  if (sub === "help" || sub === undefined) {
    process.stdout.write(MLIR_HELP);
    return sub === undefined ? 2 : 0;
  }
  if ((sub !== "print" && sub !== "info") || !file) {
    process.stderr.write(
      `${sub !== "print" && sub !== "info" ? `unknown mlir command "${sub}"` : `mlir ${sub} needs a FILE`}\n\n${MLIR_HELP}`,
    );
    return 2;
  }
  try {
    process.stdout.write(sub === "print" ? mlirPrint(file) : mlirInfo(file));
    return 0;
  } catch (e) {
    process.stderr.write(`xlaserve mlir ${sub}: ${(e as Error).message}\n`);
    return 1;
  }
}
