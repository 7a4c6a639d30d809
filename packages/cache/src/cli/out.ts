/** Where CLI commands print: process.stdout, or a string sink in tests. */
export interface OutStream {
  write(chunk: string): unknown;
  /** When true, progress redraws one line; otherwise it prints one line per step. */
  readonly isTTY?: boolean;
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(v < 10 ? 2 : 1)} ${units[i]}`;
}

export function formatMs(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return "-";
  return ms < 10 ? ms.toFixed(2) : ms < 1000 ? ms.toFixed(1) : ms.toFixed(0);
}

export function formatTime(epochMs: number | null | undefined): string {
  return epochMs ? new Date(epochMs).toISOString().replace(/\.\d+Z$/, "Z") : "-";
}

/** Parses "500M", "2G", "1048576", "1.5GiB" into bytes (the CLI's --max-bytes). */
export function parseByteSize(text: string): number {
  const m = /^\s*([0-9]+(?:\.[0-9]+)?)\s*([kmgt]?)(i?b)?\s*$/i.exec(text);
  if (!m) throw new Error(`not a byte size: ${JSON.stringify(text)}`);
  const power = { "": 0, k: 1, m: 2, g: 3, t: 4 }[m[2]!.toLowerCase() as "" | "k" | "m" | "g" | "t"];
  return Math.floor(Number(m[1]) * 1024 ** power);
}
