import type { OutStream } from "./out.ts";

/**
 * A progress bar. On a terminal it redraws one line; elsewhere (logs, CI, tests) it prints one
 * line per finished step, so the output stays readable when captured.
 */
export class ProgressBar {
  #done = 0;

  constructor(
    private readonly out: OutStream,
    private readonly total: number,
    private readonly width = 24,
  ) {}

  #bar(): string {
    const filled = this.total === 0 ? this.width : Math.round((this.#done / this.total) * this.width);
    return `[${"#".repeat(filled)}${".".repeat(this.width - filled)}] ${this.#done}/${this.total}`;
  }

  /** Shows what is being worked on now (terminal only). */
  start(label: string): void {
    if (this.out.isTTY) this.out.write(`\r\x1b[K${this.#bar()} ${label}`);
  }

  step(label: string): void {
    this.#done++;
    if (this.out.isTTY) this.out.write(`\r\x1b[K${this.#bar()} ${label}`);
    else this.out.write(`${this.#bar()} ${label}\n`);
  }

  finish(): void {
    if (this.out.isTTY) this.out.write("\n");
  }
}
