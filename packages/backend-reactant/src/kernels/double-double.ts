/**
 * Double-double arithmetic (a value as an unevaluated sum hi + lo, ~106 bits): enough headroom
 * to sum alternating series whose terms are thousands of times larger than the result and
 * still round the result correctly to f64.
 */
export type DD = [number, number];

const SPLITTER = 134217729; // 2^27 + 1

function twoSum(a: number, b: number): DD {
  const s = a + b;
  const bb = s - a;
  return [s, a - (s - bb) + (b - bb)];
}

function split(a: number): DD {
  const c = SPLITTER * a;
  const hi = c - (c - a);
  return [hi, a - hi];
}

function twoProd(a: number, b: number): DD {
  const p = a * b;
  const [ah, al] = split(a);
  const [bh, bl] = split(b);
  return [p, ah * bh - p + ah * bl + al * bh + al * bl];
}

export function ddAdd(a: DD, b: DD): DD {
  const [s, e] = twoSum(a[0], b[0]);
  const [hi, lo] = twoSum(s, e + a[1] + b[1]);
  return [hi, lo];
}

export function ddMul(a: DD, b: DD): DD {
  const [p, e] = twoProd(a[0], b[0]);
  return twoSum(p, e + a[0] * b[1] + a[1] * b[0]);
}

export function ddDivNumber(a: DD, b: number): DD {
  const q = a[0] / b;
  const [p, e] = twoProd(q, b);
  const r = (a[0] - p - e + a[1]) / b;
  return twoSum(q, r);
}

export function ddFromProduct(a: number, b: number): DD {
  return twoProd(a, b);
}
