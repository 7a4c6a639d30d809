/**
 * "Did you mean": the known name closest to a misspelt one (flags, environment variables,
 * commands), or null when none is close enough to be a likely slip.
 */
export function closestName(given: string, known: Iterable<string>): string | null {
  const word = given.toLowerCase();
  // About one slip in four letters, at least two (a swap counts as two).
  const limit = Math.max(2, Math.floor(word.length / 4));
  let best: string | null = null;
  let bestDistance = limit + 1;
  for (const candidate of known) {
    const d = editDistance(word, candidate.toLowerCase());
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

/** Levenshtein distance (insertions, deletions, substitutions), one row at a time. */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitute = (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1);
      row.push(Math.min(substitute, (previous[j] as number) + 1, (row[j - 1] as number) + 1));
    }
    previous = row;
  }
  return previous[b.length] as number;
}

/** " (did you mean X?)" or "". */
export function didYouMean(given: string, known: Iterable<string>): string {
  const match = closestName(given, known);
  return match ? `; did you mean ${match}?` : "";
}
