import type { ClientTally } from "./clients.ts";

/** One row of the fault table. */
export interface FaultRow {
  readonly fault: string;
  readonly cases: number;
  /** The worker process never died (restarts the case itself made aside) and served after. */
  readonly survived: boolean;
  /** 200 answers that matched no version the bundle ever had (must be 0). */
  readonly wrongAnswers: number;
  /** Worst time from the end of the fault to serving the right answers again (ms). */
  readonly recoverMs: number | null;
  readonly notes: string;
}

/** A row from what a fault class saw: its clients' tally (if any) goes into the notes. */
export function row(
  fault: string,
  cases: number,
  survived: boolean,
  tally: ClientTally | null,
  recoverMs: number | null,
  notes: string,
): FaultRow {
  const statuses = tally
    ? Object.entries(tally.statuses)
        .map(([s, n]) => `${n}x${s}`)
        .join(" ")
    : "";
  return {
    fault,
    cases,
    survived,
    wrongAnswers: tally?.wrong ?? 0,
    recoverMs: recoverMs === null ? null : Math.round(recoverMs),
    notes: [notes, tally ? `${tally.ok} answers checked` : "", statuses ? `other answers: ${statuses}` : ""]
      .filter(Boolean)
      .join("; "),
  };
}

/** The table as Markdown. */
export function formatTable(rows: readonly FaultRow[]): string {
  const lines = [
    "| fault class | cases | worker survived | wrong answers | time to recover (ms) | notes |",
    "| --- | --- | --- | --- | --- | --- |",
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.fault} | ${r.cases} | ${r.survived ? "yes" : "NO"} | ${r.wrongAnswers} | ${r.recoverMs ?? "-"} | ${r.notes} |`,
    );
  }
  return lines.join("\n");
}
