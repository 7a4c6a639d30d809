/**
 * Applies a general scatter region with few region calls while keeping sequential semantics.
 * The (target, update) pairs, in application order, are split into rounds: round r holds the
 * r-th update of every target. Targets within a round are distinct, so one batched region call
 * per round gives the same result as applying the pairs one by one (each target still sees
 * its updates in order). Without duplicates that is a single call.
 */
import { type NDArray, type RegionInfo, alloc, elementCount, slotsPerElement } from "../../array.ts";
import { bitExact } from "./permute.ts";

function mover(src: NDArray, dst: NDArray): (from: number, to: number) => void {
  const s = bitExact(src.data, slotsPerElement(src.type));
  const q = s.slots;
  const sv = s.view as unknown as { [i: number]: unknown };
  const dv = bitExact(dst.data, slotsPerElement(dst.type)).view as unknown as { [i: number]: unknown };
  return (from, to) => {
    for (let k = 0; k < q; k++) dv[to * q + k] = sv[from * q + k];
  };
}

export function applyInRounds(
  results: NDArray[],
  updates: readonly NDArray[],
  region: RegionInfo,
  targets: readonly number[],
  sources: readonly number[],
): void {
  const seen = new Map<number, number>();
  const round = new Int32Array(targets.length);
  let rounds = 0;
  targets.forEach((t, i) => {
    const r = seen.get(t) ?? 0;
    seen.set(t, r + 1);
    round[i] = r;
    rounds = Math.max(rounds, r + 1);
  });
  for (let r = 0; r < rounds; r++) {
    const members: number[] = [];
    for (let i = 0; i < targets.length; i++) if (round[i] === r) members.push(i);
    const length = members.length;
    const current = results.map((res) => {
      const out = alloc(res.type, [length]);
      const move = mover(res, out);
      for (let j = 0; j < length; j++) move(targets[members[j] as number] as number, j);
      return out;
    });
    const incoming = updates.map((upd) => {
      const out = alloc(upd.type, [length]);
      const move = mover(upd, out);
      for (let j = 0; j < length; j++) move(sources[members[j] as number] as number, j);
      return out;
    });
    const produced = region.batched([...current, ...incoming]);
    results.forEach((res, k) => {
      const value = produced[k] as NDArray;
      const move = mover(value, res);
      const broadcast = elementCount(value.shape) === 1;
      for (let j = 0; j < length; j++) move(broadcast ? 0 : j, targets[members[j] as number] as number);
    });
  }
}
