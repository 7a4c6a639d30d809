/**
 * One-dimensional complex DFT in f64, in place on split re / im arrays: iterative radix-2 for
 * powers of two, Bluestein's chirp-z (through a power-of-two FFT) for every other length
 * above a few dozen, and a direct O(n^2) DFT for the short ones where it is cheaper.
 */

const DIRECT_LIMIT = 32;

export interface Fft1d {
  /** Transforms re/im in place; `inverse` uses e^{+i...} and does not scale. */
  run(re: Float64Array, im: Float64Array, inverse: boolean): void;
}

function isPowerOfTwo(n: number): boolean {
  return n > 0 && (n & (n - 1)) === 0;
}

function radix2(n: number): Fft1d {
  const bits = Math.log2(n);
  const reverse = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    let r = 0;
    for (let b = 0; b < bits; b++) r |= ((i >> b) & 1) << (bits - 1 - b);
    reverse[i] = r;
  }
  const cos = new Float64Array(n / 2);
  const sin = new Float64Array(n / 2);
  for (let k = 0; k < n / 2; k++) {
    cos[k] = Math.cos((2 * Math.PI * k) / n);
    sin[k] = Math.sin((2 * Math.PI * k) / n);
  }
  return {
    run(re, im, inverse) {
      for (let i = 0; i < n; i++) {
        const j = reverse[i] as number;
        if (j > i) {
          [re[i], re[j]] = [re[j] as number, re[i] as number];
          [im[i], im[j]] = [im[j] as number, im[i] as number];
        }
      }
      const sign = inverse ? 1 : -1;
      for (let size = 2; size <= n; size *= 2) {
        const half = size / 2;
        const step = n / size;
        for (let start = 0; start < n; start += size) {
          for (let k = 0; k < half; k++) {
            const wr = cos[k * step] as number;
            const wi = sign * (sin[k * step] as number);
            const a = start + k;
            const b = a + half;
            const br = re[b] as number;
            const bi = im[b] as number;
            const tr = br * wr - bi * wi;
            const ti = br * wi + bi * wr;
            re[b] = (re[a] as number) - tr;
            im[b] = (im[a] as number) - ti;
            re[a] = (re[a] as number) + tr;
            im[a] = (im[a] as number) + ti;
          }
        }
      }
    },
  };
}

function direct(n: number): Fft1d {
  const cos = new Float64Array(n);
  const sin = new Float64Array(n);
  for (let k = 0; k < n; k++) {
    cos[k] = Math.cos((2 * Math.PI * k) / n);
    sin[k] = Math.sin((2 * Math.PI * k) / n);
  }
  const outRe = new Float64Array(n);
  const outIm = new Float64Array(n);
  return {
    run(re, im, inverse) {
      const sign = inverse ? 1 : -1;
      for (let k = 0; k < n; k++) {
        let sr = 0;
        let si = 0;
        for (let t = 0; t < n; t++) {
          const w = (k * t) % n;
          const wr = cos[w] as number;
          const wi = sign * (sin[w] as number);
          sr += (re[t] as number) * wr - (im[t] as number) * wi;
          si += (re[t] as number) * wi + (im[t] as number) * wr;
        }
        outRe[k] = sr;
        outIm[k] = si;
      }
      re.set(outRe);
      im.set(outIm);
    },
  };
}

/** Bluestein: X[k] = conj(w_k) * sum_t (x_t conj(w_t)) w_{k-t}, with w_j = e^{i pi j^2 / n}. */
function bluestein(n: number): Fft1d {
  let size = 1;
  while (size < 2 * n - 1) size *= 2;
  const inner = radix2(size);
  const wr = new Float64Array(n);
  const wi = new Float64Array(n);
  for (let j = 0; j < n; j++) {
    // j^2 mod 2n keeps the angle small and exact for large j.
    const angle = (Math.PI * ((j * j) % (2 * n))) / n;
    wr[j] = Math.cos(angle);
    wi[j] = Math.sin(angle);
  }
  // The chirp filter's spectrum, for the forward direction; the inverse uses its conjugate pattern.
  const filter = (sign: number) => {
    const fr = new Float64Array(size);
    const fi = new Float64Array(size);
    for (let j = 0; j < n; j++) {
      fr[j] = wr[j] as number;
      fi[j] = sign * (wi[j] as number);
      if (j > 0) {
        fr[size - j] = wr[j] as number;
        fi[size - j] = sign * (wi[j] as number);
      }
    }
    inner.run(fr, fi, false);
    return [fr, fi] as const;
  };
  const forwardFilter = filter(1);
  const inverseFilter = filter(-1);
  const ar = new Float64Array(size);
  const ai = new Float64Array(size);
  return {
    run(re, im, inverse) {
      const s = inverse ? -1 : 1;
      const [fr, fi] = inverse ? inverseFilter : forwardFilter;
      ar.fill(0);
      ai.fill(0);
      for (let t = 0; t < n; t++) {
        // x_t * conj(w_t) (forward) or x_t * w_t (inverse).
        const cr = wr[t] as number;
        const ci = -s * (wi[t] as number);
        ar[t] = (re[t] as number) * cr - (im[t] as number) * ci;
        ai[t] = (re[t] as number) * ci + (im[t] as number) * cr;
      }
      inner.run(ar, ai, false);
      for (let j = 0; j < size; j++) {
        const xr = ar[j] as number;
        const xi = ai[j] as number;
        ar[j] = xr * (fr[j] as number) - xi * (fi[j] as number);
        ai[j] = xr * (fi[j] as number) + xi * (fr[j] as number);
      }
      inner.run(ar, ai, true);
      for (let k = 0; k < n; k++) {
        const yr = (ar[k] as number) / size;
        const yi = (ai[k] as number) / size;
        const cr = wr[k] as number;
        const ci = -s * (wi[k] as number);
        re[k] = yr * cr - yi * ci;
        im[k] = yr * ci + yi * cr;
      }
    },
  };
}

const cache = new Map<number, Fft1d>();

/** A reusable transform for length n (plans are cached per length). */
export function fft1d(n: number): Fft1d {
  let plan = cache.get(n);
  if (!plan) {
    plan = n <= 1 ? { run() {} } : isPowerOfTwo(n) ? radix2(n) : n <= DIRECT_LIMIT ? direct(n) : bluestein(n);
    cache.set(n, plan);
  }
  return plan;
}
