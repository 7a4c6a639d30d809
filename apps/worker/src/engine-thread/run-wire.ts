/**
 * The request path's messages to and from the engine thread, packed into one ArrayBuffer per
 * batch. Bun's structured clone of nested objects (calls, tensors, shapes) cost about twice a
 * flat buffer's round trip (tmp measurements: 27 us against 13 us per ping-pong on 2 cores); a
 * run call is fixed fields plus tensors, so it packs as words and 8-byte-aligned element bytes,
 * and the tensors decode as views into the buffer (no copy).
 *
 * Tensors of OUT_OF_LINE_MIN_BYTES or more travel beside the packed words instead, each in an
 * ArrayBuffer of the message's own: a buffer the request path noted movable (movable-buffers.ts:
 * a request body, one execution's joined inputs) is transferred as it is, anything else copied
 * once into a fresh buffer; the packed words then say which part and where in it. (Copying an
 * image input into the packed buffer cost a zeroed allocation and a copy of every input byte on
 * the HTTP thread per request, about a third of its time for 600 KB inputs.)
 *
 * Layout (little-endian u32 words unless noted):
 *   message := batch | [batch, part*]   (the parts: ArrayBuffers that out-of-line tensors point into)
 *   batch   := MAGIC count item*
 *   call    := id handle nInputs nResident resident[nResident] tensor[nInputs]
 *   reply   := id status (status 0: nOutputs tensor[nOutputs] | status 1: byteLength utf8-json pad)
 *   tensor  := dtypeIndex rank dim[rank] (f64 each, 8-aligned) byteLength pad bytes pad
 *            | (dtypeIndex | IN_FILE) rank dim[rank] byteLength pad offset (f64) pathLength path pad
 *              (the bytes stay in a shared mapping of a file, mappedFileOf: the engine thread
 *              maps the same file and reads them in place, so a shared-memory input is never
 *              copied on its way to the engine)
 *            | (dtypeIndex | OUT_OF_LINE) rank dim[rank] byteLength pad part offset (f64)
 *            | (dtypeIndex | ROWS) rank dim[rank] byteLength pad n pad (part byteLength offset (f64))[n]
 *              (a coalesced input, joinRowsLater: its requests' parts, joined along axis 0 and
 *              zero-padded to dim[0] rows on the engine thread, not on the HTTP thread)
 *   replies := MAGIC_REPLY count inUse peak limit (f64 each; limit -1 when null) reply*
 */
import { type HostTensor, type MemoryStats, bytesOfTensor, isMovable, unalignedBytesOf } from "@xlaserve/core";
import { rowPartsOf } from "../model/joined-rows.ts";
import {
  OUT_OF_LINE_MIN_BYTES,
  type OpenMapped,
  type Placed,
  Reader,
  type TakeBuffer,
  Writer,
  align8,
  inFile,
  tensorSize,
  utf8Decoder,
  utf8Encoder,
} from "./tensor-codec.ts";

export { IN_FILE_MIN_BYTES, OUT_OF_LINE_MIN_BYTES, type OpenMapped, type TakeBuffer } from "./tensor-codec.ts";

const MAGIC_CALLS = 0x52554e31; // "RUN1"
const MAGIC_REPLIES = 0x52455031; // "REP1"

/**
 * The transfer list for a packed batch: small ones are cheaper to copy than to transfer
 * (measured in Bun 1.4.5: about 0.9 us against 1.5 us per postMessage of a 400-byte buffer).
 */
export function transferFor(packed: ArrayBuffer): ArrayBuffer[] {
  return packed.byteLength >= 64 * 1024 ? [packed] : [];
}

export interface RunCall {
  readonly id: number;
  readonly handle: number;
  readonly inputs: readonly HostTensor[];
  readonly resident: readonly number[];
}

/** A run batch as posted: the message and its transfer list; how many bytes moved and were copied. */
export interface PackedRunCalls {
  readonly message: ArrayBuffer | ArrayBuffer[];
  readonly transfer: ArrayBuffer[];
  /** Input bytes handed over in their own (transferred) buffers, without a copy. */
  readonly movedBytes: number;
  /** Input bytes copied on the way (into the packed words or a part of their own). */
  readonly copiedBytes: number;
}

export interface WireError {
  readonly code: string;
  readonly message: string;
  readonly details: Record<string, unknown>;
}

export type RunReply =
  | { readonly id: number; readonly ok: true; readonly outputs: readonly HostTensor[] }
  | { readonly id: number; readonly ok: false; readonly error: WireError };

export function encodeRunCalls(calls: readonly RunCall[]): PackedRunCalls {
  let size = 8;
  const placed = new Map<HostTensor, Placed>();
  const parts: ArrayBuffer[] = [];
  const partOf = new Map<ArrayBuffer, number>();
  let movedBytes = 0;
  let copiedBytes = 0;
  const partFor = (buffer: ArrayBuffer): number => {
    let part = partOf.get(buffer);
    if (part === undefined) {
      part = parts.push(buffer) - 1;
      partOf.set(buffer, part);
    }
    return part;
  };
  for (const c of calls) {
    size = align8(size + 16 + 4 * c.resident.length);
    for (const t of c.inputs) {
      const joined = rowsToMove(t);
      if (joined) {
        const rows = joined.map((p) => {
          movedBytes += p.byteLength;
          return { part: partFor(p.buffer as ArrayBuffer), offset: p.byteOffset, byteLength: p.byteLength };
        });
        placed.set(t, { rows });
        size += tensorSize(t, { rows });
        continue;
      }
      const raw = unalignedBytesOf(t);
      if (raw && raw.byteLength >= OUT_OF_LINE_MIN_BYTES && isMovable(raw)) {
        // Bytes at an offset their dtype cannot be viewed at: they move as they are, and the
        // engine thread makes the aligned copy (tensor-codec.ts) instead of this one.
        placed.set(t, { part: partFor(raw.buffer as ArrayBuffer), offset: raw.byteOffset });
        movedBytes += raw.byteLength;
        size += tensorSize(t, placed.get(t));
        continue;
      }
      const d = t.data;
      const file = inFile(t);
      if (file) placed.set(t, file);
      else if (d.byteLength >= OUT_OF_LINE_MIN_BYTES) {
        if (isMovable(d)) {
          placed.set(t, { part: partFor(d.buffer as ArrayBuffer), offset: d.byteOffset });
          movedBytes += d.byteLength;
        } else {
          // slice: one copy into a fresh buffer, no zero-fill first.
          const copy = new Uint8Array(d.buffer, d.byteOffset, d.byteLength).slice().buffer;
          placed.set(t, { part: parts.push(copy) - 1, offset: 0 });
          copiedBytes += d.byteLength;
        }
      } else if (d.byteLength > 0) copiedBytes += d.byteLength;
      size += tensorSize(t, placed.get(t));
    }
  }
  const w = new Writer(new ArrayBuffer(size));
  w.u32(MAGIC_CALLS);
  w.u32(calls.length);
  for (const c of calls) {
    w.u32(c.id);
    w.u32(c.handle);
    w.u32(c.inputs.length);
    w.u32(c.resident.length);
    for (const h of c.resident) w.u32(h);
    w.at = align8(w.at);
    for (const t of c.inputs) w.tensor(t, placed.get(t));
  }
  const packed = w.buffer;
  const transfer = packed.byteLength >= 64 * 1024 ? [packed, ...parts] : parts;
  return { message: parts.length > 0 ? [packed, ...parts] : packed, transfer, movedBytes, copiedBytes };
}

/**
 * A joined input's parts, when every one can be transferred and is worth a part of its own (each
 * a request's input of OUT_OF_LINE_MIN_BYTES or more); else null, and the input is joined here.
 */
function rowsToMove(t: HostTensor): Uint8Array[] | null {
  const rows = rowPartsOf(t);
  if (!rows) return null;
  // Each part's bytes as they lie (an unaligned input is never copied here to be aligned).
  const data = rows.parts.map(bytesOfTensor);
  return data.every((d) => d.byteLength >= OUT_OF_LINE_MIN_BYTES && isMovable(d)) ? data : null;
}

export function isRunCalls(data: unknown): data is ArrayBuffer | ArrayBuffer[] {
  const packed = Array.isArray(data) ? data[0] : data;
  return (
    packed instanceof ArrayBuffer && packed.byteLength >= 8 && new DataView(packed).getUint32(0, true) === MAGIC_CALLS
  );
}

/** A decoded run call; `failure` is set when one of its inputs could not be read. */
export type DecodedRunCall = RunCall & { readonly failure?: unknown };

/**
 * `openMapped` reads the inputs that stay in mapped files (without it, such a call fails);
 * `takeBuffer` gives the storage a joined input is copied into (default: a fresh buffer).
 */
export function decodeRunCalls(
  message: ArrayBuffer | readonly ArrayBuffer[],
  openMapped?: OpenMapped,
  takeBuffer?: TakeBuffer,
): DecodedRunCall[] {
  const [buffer, ...parts] = Array.isArray(message) ? message : [message as ArrayBuffer];
  if (!buffer) throw new Error("engine wire: an empty run batch");
  const r = new Reader(buffer, openMapped, parts, takeBuffer);
  if (r.u32() !== MAGIC_CALLS) throw new Error("engine wire: not a run batch");
  const count = r.u32();
  const calls: DecodedRunCall[] = [];
  for (let k = 0; k < count; k++) {
    r.failure = undefined;
    const id = r.u32();
    const handle = r.u32();
    const nInputs = r.u32();
    const nResident = r.u32();
    const resident: number[] = [];
    for (let i = 0; i < nResident; i++) resident.push(r.u32());
    r.at = align8(r.at);
    const inputs: HostTensor[] = [];
    for (let i = 0; i < nInputs; i++) inputs.push(r.tensor());
    calls.push(
      r.failure === undefined ? { id, handle, inputs, resident } : { id, handle, inputs, resident, failure: r.failure },
    );
  }
  return calls;
}

export function encodeRunReplies(replies: readonly RunReply[], stats: MemoryStats | null): ArrayBuffer {
  const errors = new Map<number, Uint8Array>();
  let size = 8 + 40; // magic, count, then five f64 memory figures
  replies.forEach((rep, i) => {
    size = align8(size + 12);
    if (rep.ok) {
      for (const t of rep.outputs) size += tensorSize(t);
    } else {
      const json = utf8Encoder.encode(JSON.stringify(rep.error));
      errors.set(i, json);
      size += 8 + align8(json.byteLength);
    }
  });
  const w = new Writer(new ArrayBuffer(size));
  w.u32(MAGIC_REPLIES);
  w.u32(replies.length);
  w.f64(stats ? stats.inUseBytes : -1);
  w.f64(stats ? stats.peakBytes : -1);
  w.f64(stats?.limitBytes ?? -1);
  w.f64(stats?.poolBytes ?? -1);
  w.f64(stats?.largestFreeBlockBytes ?? -1);
  replies.forEach((rep, i) => {
    w.at = align8(w.at);
    w.u32(rep.id);
    if (rep.ok) {
      w.u32(0);
      w.u32(rep.outputs.length);
      w.at = align8(w.at);
      for (const t of rep.outputs) w.tensor(t);
    } else {
      w.u32(1);
      w.raw(errors.get(i) as Uint8Array);
    }
  });
  return w.buffer;
}

export function isRunReplies(data: unknown): data is ArrayBuffer {
  return data instanceof ArrayBuffer && data.byteLength >= 8 && new DataView(data).getUint32(0, true) === MAGIC_REPLIES;
}

export function decodeRunReplies(buffer: ArrayBuffer): { replies: RunReply[]; stats: MemoryStats | null } {
  const r = new Reader(buffer);
  if (r.u32() !== MAGIC_REPLIES) throw new Error("engine wire: not a reply batch");
  const count = r.u32();
  const inUse = r.f64();
  const peak = r.f64();
  const limit = r.f64();
  const pool = r.f64();
  const largestFree = r.f64();
  const stats: MemoryStats | null =
    inUse < 0
      ? null
      : {
          inUseBytes: inUse,
          peakBytes: peak,
          limitBytes: limit < 0 ? null : limit,
          ...(pool < 0 ? {} : { poolBytes: pool }),
          ...(largestFree < 0 ? {} : { largestFreeBlockBytes: largestFree }),
        };
  const replies: RunReply[] = [];
  for (let k = 0; k < count; k++) {
    r.at = align8(r.at);
    const id = r.u32();
    if (r.u32() === 0) {
      const n = r.u32();
      r.at = align8(r.at);
      const outputs: HostTensor[] = [];
      for (let i = 0; i < n; i++) outputs.push(r.tensor());
      replies.push({ id, ok: true, outputs });
    } else {
      replies.push({ id, ok: false, error: JSON.parse(utf8Decoder.decode(r.raw())) as WireError });
    }
  }
  return { replies, stats };
}
