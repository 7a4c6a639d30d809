/**
 * Every f32 input of tanh, exp or logistic against XLA CPU's bits:
 *
 *   python tools/xla_unary_bits.py stream tanh f32 | bun packages/backend-reactant/src/tools/xla-unary-agreement.ts tanh
 *
 * reads XLA's results for all 2^32 bit patterns in order (16 GiB through the pipe, a few
 * minutes) and prints how many of the engine's results (elem/xla-f32-math.ts) differ, a NaN
 * matching any NaN, with the first few that do.
 */
import { expXlaF32, logisticXlaF32, tanhXlaF32 } from "../elem/xla-f32-math.ts";

const FUNCTIONS: Record<string, (x: number) => number> = {
  tanh: tanhXlaF32,
  exponential: expXlaF32,
  logistic: logisticXlaF32,
};
const op = process.argv[2] ?? "";
const fn = FUNCTIONS[op];
if (!fn) {
  console.error(`unknown op ${JSON.stringify(op)}: one of ${Object.keys(FUNCTIONS).join(", ")}`);
  process.exit(2);
}

const CHUNK = 1 << 24;
const input = new Uint32Array(CHUNK);
const inputF32 = new Float32Array(input.buffer);
const ours = new Float32Array(1);
const oursBits = new Uint32Array(ours.buffer);
const buffer = new Uint8Array(CHUNK * 4);
const xla = new Uint32Array(buffer.buffer);
const xlaF32 = new Float32Array(buffer.buffer);
let chunks = 0;
let mismatches = 0;
const examples: string[] = [];

function compareChunk(): void {
  const base = chunks * CHUNK;
  for (let i = 0; i < CHUNK; i++) input[i] = base + i;
  for (let i = 0; i < CHUNK; i++) {
    ours[0] = (fn as (x: number) => number)(inputF32[i] as number);
    const a = oursBits[0] as number;
    const b = xla[i] as number;
    if (a === b || (Number.isNaN(ours[0]) && Number.isNaN(xlaF32[i]))) continue;
    mismatches++;
    if (examples.length < 10)
      examples.push(`0x${(base + i).toString(16)}: ours 0x${a.toString(16)}, XLA 0x${b.toString(16)}`);
  }
  chunks++;
}

let fill = 0;
const reader = Bun.stdin.stream().getReader();
for (;;) {
  const { value, done } = await reader.read();
  if (done) break;
  for (let at = 0; at < value.length; ) {
    const n = Math.min(value.length - at, buffer.length - fill);
    buffer.set(value.subarray(at, at + n), fill);
    fill += n;
    at += n;
    if (fill === buffer.length) {
      compareChunk();
      fill = 0;
    }
  }
}
if (fill !== 0) console.error(`the stream ended ${fill} bytes into a chunk: those inputs were not compared`);
console.log(JSON.stringify({ op, inputs: chunks * CHUNK, mismatches, examples }, null, 1));
if (chunks * CHUNK !== 2 ** 32) console.error(`only ${chunks * CHUNK} of the 2^32 inputs came through`);
