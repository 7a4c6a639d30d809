import type { OpTime, Step } from "./types.ts";

/**
 * Exclusive time per step: a step that runs blocks (while, case, reduce regions, calls) is charged
 * only for what its nested steps did not take.
 */
export class StepTimes {
  readonly byStep = new Map<Step, OpTime>();
  private readonly nested: number[] = [];

  begin(): void {
    this.nested.push(0);
  }

  end(step: Step, ms: number): void {
    const inner = this.nested.pop() ?? 0;
    const depth = this.nested.length;
    if (depth > 0) this.nested[depth - 1] = (this.nested[depth - 1] as number) + ms;
    recordTime(this.byStep, step, ms - inner);
  }
}

export function recordTime<K>(profile: Map<K, OpTime>, name: K, ms: number): void {
  const entry = profile.get(name);
  if (entry) {
    entry.ms += ms;
    entry.count++;
  } else profile.set(name, { ms, count: 1 });
}
