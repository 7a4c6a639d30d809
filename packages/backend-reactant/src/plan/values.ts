import type { NDArray } from "../array.ts";

/** What a slot holds while a program runs: an array, a tuple, or a token (ordering only). */
export type RtValue = NDArray | RtTuple | RtToken;

export interface RtTuple {
  readonly tuple: RtValue[];
}

export interface RtToken {
  readonly token: true;
}

export const TOKEN: RtToken = { token: true };

export function isArray(v: RtValue | undefined): v is NDArray {
  return v !== undefined && "data" in v;
}

export function isTuple(v: RtValue | undefined): v is RtTuple {
  return v !== undefined && "tuple" in v;
}

/** A failed check op (check.expect_* custom calls and the check dialect). */
export interface CheckFailure {
  readonly check: string;
  readonly message: string;
}
