import { ByteReader } from "./byte-reader.ts";
import { readBuiltinAttr, readBuiltinType } from "./builtin.ts";
import { type Container, SECTION } from "./container.ts";
import type { RawAttr, RawType } from "./values.ts";
import { readVhloAttr, readVhloType } from "./vhlo-encoding.ts";

interface Entry {
  readonly dialect: string;
  readonly custom: boolean;
  readonly start: number;
  readonly end: number;
}

/**
 * The attribute and type tables. Entries are decoded on first use only (an op's debug location
 * is never decoded unless asked for), and a reference back to an entry still being decoded is
 * refused, so a corrupt file cannot recurse forever.
 */
export class AttrTypeTable {
  private readonly attrEntries: Entry[] = [];
  private readonly typeEntries: Entry[] = [];
  private readonly attrs: (RawAttr | undefined | null)[] = [];
  private readonly types: (RawType | undefined | null)[] = [];
  private depth = 0;

  constructor(readonly container: Container) {
    const data = container.sections[SECTION.attrType] as ByteReader;
    const offsets = container.sections[SECTION.attrTypeOffset] as ByteReader;
    const r = new ByteReader(offsets.bytes, offsets.origin, offsets.pos, offsets.end);
    const attrCount = r.count("the number of attributes");
    const typeCount = r.count("the number of types");
    let at = data.pos;
    const fill = (into: Entry[], total: number, what: string) => {
      // Described once, not per entry: the descriptions matter only when a read fails.
      const groupDialect = `a ${what} group's dialect`;
      const groupSize = `the size of a ${what} group`;
      const entrySize = `a ${what} entry size`;
      while (into.length < total) {
        const groupAt = r.pos;
        const dialectIndex = r.varint(groupDialect);
        const dialect = container.dialects[dialectIndex];
        if (!dialect)
          throw r.fail(`a dialect index below ${container.dialects.length}, found ${dialectIndex}`, groupAt);
        const n = r.varint(groupSize);
        if (n > total - into.length) throw r.fail(`at most ${total - into.length} more ${what} entries`, groupAt);
        for (let i = 0; i < n; i++) {
          const entryAt = r.pos;
          const [size, custom] = r.varintFlag(entrySize);
          if (at + size > data.end) throw r.fail(`a ${what} entry inside the attribute/type section`, entryAt);
          into.push({ dialect: dialect.name, custom, start: at, end: at + size });
          at += size;
        }
      }
    };
    fill(this.attrEntries, attrCount, "attribute");
    fill(this.typeEntries, typeCount, "type");
    if (!r.atEnd()) throw r.fail("the attribute/type offset section to end after its entries");
  }

  /** Reads an attribute index at `r` and resolves it. */
  attr(r: ByteReader, what = "an attribute"): RawAttr {
    const at = r.pos;
    return this.attrAt(r.varint(what), r, at);
  }

  type(r: ByteReader, what = "a type"): RawType {
    const at = r.pos;
    return this.typeAt(r.varint(what), r, at);
  }

  attrAt(index: number, r: ByteReader, at: number): RawAttr {
    const cached = this.attrs[index];
    if (cached) return cached;
    const entry = this.attrEntries[index];
    if (!entry) throw r.fail(`an attribute index below ${this.attrEntries.length}, found ${index}`, at);
    if (cached === null) throw r.fail(`attribute ${index} not to refer to itself`, at);
    this.attrs[index] = null;
    const value = this.decode(entry, "attribute", (er) =>
      entry.dialect === "builtin" ? readBuiltinAttr(er, this) : readVhloAttr(er, this),
    );
    this.attrs[index] = value as RawAttr;
    return value as RawAttr;
  }

  typeAt(index: number, r: ByteReader, at: number): RawType {
    const cached = this.types[index];
    if (cached) return cached;
    const entry = this.typeEntries[index];
    if (!entry) throw r.fail(`a type index below ${this.typeEntries.length}, found ${index}`, at);
    if (cached === null) throw r.fail(`type ${index} not to refer to itself`, at);
    this.types[index] = null;
    const value = this.decode(entry, "type", (er) =>
      entry.dialect === "builtin" ? readBuiltinType(er, this) : readVhloType(er, this),
    );
    this.types[index] = value as RawType;
    return value as RawType;
  }

  private decode(entry: Entry, what: string, custom: (r: ByteReader) => RawAttr | RawType): RawAttr | RawType {
    const r = new ByteReader(
      this.container.sections[SECTION.attrType]?.bytes as Uint8Array,
      this.container.origin,
      entry.start,
      entry.end,
    );
    if (++this.depth > 200) throw r.fail(`${what}s nested at most 200 deep`);
    try {
      let value: RawAttr | RawType;
      if (!entry.custom) {
        value = { k: "opaque", text: r.nullTerminated(`the assembly text of a ${entry.dialect} ${what}`) };
      } else if (entry.dialect === "builtin" || entry.dialect === "vhlo") {
        value = custom(r);
      } else {
        throw r.fail(`a builtin or vhlo ${what}, found one of the ${entry.dialect} dialect in binary form`);
      }
      if (!r.atEnd()) throw r.fail(`the ${entry.dialect} ${what} entry to end here (${r.remaining} bytes left)`);
      return value;
    } finally {
      this.depth--;
    }
  }
}

/** `count, item...` with the count checked against the bytes left. */
export function readList<T>(r: ByteReader, what: string, item: () => T): T[] {
  const n = r.count(`the length of ${what}`);
  const out: T[] = new Array(n);
  for (let i = 0; i < n; i++) out[i] = item();
  return out;
}

export function readSignedList(r: ByteReader, what: string): number[] {
  return readList(r, what, () => r.svarint(what));
}

/** A blob: `size, bytes`. */
export function readBlob(r: ByteReader, what: string): Uint8Array {
  const size = r.varint(`the size of ${what}`);
  return r.take(size, what);
}

/** MLIR's dynamic dimension (INT64_MIN) as -1, the program model's spelling. */
export function dims(shape: number[]): number[] {
  return shape.map((d) => (d < 0 ? -1 : d));
}
