import type { OutStream } from "../../src/cli/out.ts";

/** Collects what a CLI command prints. */
export class StringOut implements OutStream {
  text = "";
  constructor(readonly isTTY = false) {}
  write(chunk: string): void {
    this.text += chunk;
  }
}
