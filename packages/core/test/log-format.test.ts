/**
 * Log lines people can read: on a terminal (format auto, the default) one compact human line per
 * record, JSON otherwise (a file, a pipe, a log shipper).
 */
import { describe, expect, test } from "bun:test";
import { createLogger, loadConfig } from "../src/index.ts";

function lines(tty: boolean, format?: "auto" | "json" | "text"): string[] {
  const out: string[] = [];
  const log = createLogger({ format, tty, sink: (l) => out.push(l) }).child({ component: "worker" });
  log.info("model loaded", {
    model: "mlp",
    ms: 12.5,
    programs: [{ file: "model.b1.mlir", cache: "hit", ms: 1.2 }],
    missing: undefined,
  });
  log.warn("slow", { why: "two words" });
  return out;
}

describe("log format", () => {
  test("the default is auto", () => {
    expect(loadConfig({ env: {} }).log.format).toBe("auto");
  });

  test("auto on a terminal: compact human lines, nested values without JSON quoting", () => {
    const [loaded, slow] = lines(true);
    expect(loaded).toMatch(
      /^\d\d:\d\d:\d\d\.\d{3} INFO {2}model loaded component=worker model=mlp ms=12\.5 programs=\[\{file=model\.b1\.mlir cache=hit ms=1\.2\}\]$/,
    );
    expect(slow).toMatch(/ WARN {2}slow component=worker why="two words"$/);
  });

  test("detail: beside the other fields in JSON, left out of the human line", () => {
    const out: string[] = [];
    for (const tty of [true, false]) {
      createLogger({ tty, sink: (l) => out.push(l) }).info("model loaded", {
        model: "mlp",
        detail: { programs: [{ file: "model.b1.mlir" }], weightBytes: 340008 },
      });
    }
    expect(out[0]).toMatch(/ INFO {2}model loaded model=mlp$/);
    const record = JSON.parse(out[1] as string);
    expect(record).toMatchObject({ model: "mlp", programs: [{ file: "model.b1.mlir" }], weightBytes: 340008 });
    expect(record.detail).toBeUndefined();
  });

  test("auto elsewhere, and json: one JSON object per line", () => {
    for (const out of [lines(false), lines(true, "json")]) {
      const record = JSON.parse(out[0] as string);
      expect(record).toMatchObject({ level: "info", msg: "model loaded", model: "mlp", component: "worker" });
    }
  });
});
