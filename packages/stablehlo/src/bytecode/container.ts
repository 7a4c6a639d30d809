import { ByteReader, decodeUtf8 } from "./byte-reader.ts";

/**
 * The MLIR bytecode container: magic, format version, producer, and the top-level sections
 * (in any order, each at most once), with the string, dialect and properties tables decoded.
 * Attributes, types and the IR are read from the sections on demand (attr-types.ts, ir.ts).
 */

export const MAGIC = [0x4d, 0x4c, 0xef, 0x52]; // "ML\xEFR"

/** The format versions this reader knows (MLIR's kVersion is 6). */
export const MAX_BYTECODE_VERSION = 6;

export const VERSION = {
  dialectVersioning: 1,
  lazyLoading: 2,
  useListOrdering: 3,
  elideUnknownBlockArgLocation: 4,
  nativeProperties: 5,
  nativeSegmentSizes: 6,
} as const;

export const SECTION = {
  string: 0,
  dialect: 1,
  attrType: 2,
  attrTypeOffset: 3,
  ir: 4,
  resource: 5,
  resourceOffset: 6,
  dialectVersions: 7,
  properties: 8,
} as const;

const SECTION_NAMES = [
  "string",
  "dialect",
  "attribute/type",
  "attribute/type offset",
  "IR",
  "resource",
  "resource offset",
  "dialect versions",
  "properties",
];

export interface Dialect {
  readonly name: string;
  /** The dialect's version entry (a reader over its bytes), when the producer wrote one. */
  readonly version: ByteReader | null;
}

export interface OpName {
  readonly dialect: Dialect;
  /** Full name, `vhlo.add_v1`. */
  readonly name: string;
  /** From version 5: whether the producer had the op registered (properties follow if so). */
  readonly registered: boolean | null;
}

export interface Container {
  readonly origin: string;
  readonly version: number;
  readonly producer: string;
  readonly strings: StringTable;
  readonly dialects: Dialect[];
  readonly opNames: OpName[];
  readonly sections: (ByteReader | null)[];
  /** Start offset (within the properties section) of each property blob. */
  readonly properties: number[];
}

export function isBytecode(bytes: Uint8Array): boolean {
  return bytes.length >= 4 && MAGIC.every((b, i) => bytes[i] === b);
}

export function readContainer(bytes: Uint8Array, origin: string): Container {
  const r = new ByteReader(bytes, origin);
  if (!isBytecode(bytes)) throw r.fail('the MLIR bytecode magic "ML\\xEFR"', 0);
  r.pos = 4;
  const versionAt = r.pos;
  const version = r.varint("the bytecode format version");
  if (version > MAX_BYTECODE_VERSION) {
    throw r.fail(
      `a bytecode format version of at most ${MAX_BYTECODE_VERSION}, found version ${version} (written by a newer MLIR than this reader knows)`,
      versionAt,
    );
  }
  const producer = r.nullTerminated("the producer string");
  const sections: (ByteReader | null)[] = new Array(SECTION_NAMES.length).fill(null);
  while (!r.atEnd()) {
    const at = r.pos;
    const { id, data } = readSection(r);
    if (sections[id]) throw r.fail(`one ${SECTION_NAMES[id]} section, found a second one`, at);
    sections[id] = data;
  }
  for (const id of [SECTION.string, SECTION.dialect, SECTION.attrType, SECTION.attrTypeOffset, SECTION.ir]) {
    if (!sections[id]) throw r.fail(`a ${SECTION_NAMES[id]} section, the file has none`, r.end);
  }
  if (version >= VERSION.nativeProperties && !sections[SECTION.properties]) {
    throw r.fail(`a properties section (required from format version ${VERSION.nativeProperties})`, r.end);
  }
  const strings = readStrings(sections[SECTION.string] as ByteReader);
  const { dialects, opNames } = readDialects(sections[SECTION.dialect] as ByteReader, strings, version);
  const properties = readPropertyOffsets(sections[SECTION.properties] ?? null);
  return { origin, version, producer, strings, dialects, opNames, sections, properties };
}

/** A section header (id with the alignment flag in its high bit, length, optional alignment). */
export function readSection(r: ByteReader): { id: number; data: ByteReader } {
  const at = r.pos;
  const idAndAligned = r.byte("a section id");
  const id = idAndAligned & 0x7f;
  const length = r.varint("a section length");
  if (id >= SECTION_NAMES.length) throw r.fail(`a section id below ${SECTION_NAMES.length}, found ${id}`, at);
  if (idAndAligned & 0x80) {
    const alignment = r.varint("a section alignment");
    if (alignment === 0 || (alignment & (alignment - 1)) !== 0 || alignment > 1 << 16) {
      throw r.fail(`a power-of-two section alignment, found ${alignment}`, at);
    }
    // Alignment is relative to the start of the file, which the writer assumes aligned.
    while (r.pos % alignment !== 0) {
      const padAt = r.pos;
      if (r.byte("alignment padding") !== 0xcb) throw r.fail("the alignment padding byte 0xCB", padAt);
    }
  }
  return { id, data: r.sub(length, `the ${SECTION_NAMES[id] ?? "unknown"} section's data`) };
}

/**
 * The string section, decoded on first use: most strings name debug locations, which the program
 * model never reads. Sizes and terminators are all checked when the section is read.
 */
export class StringTable {
  private readonly decoded: (string | undefined)[];

  constructor(
    private readonly bytes: Uint8Array,
    /** Start offset of each string, and one past the last one's NUL. */
    private readonly starts: Int32Array,
  ) {
    this.decoded = new Array(starts.length - 1);
  }

  get length(): number {
    return this.starts.length - 1;
  }

  /** The string at `index`, or undefined past the end. */
  at(index: number): string | undefined {
    if (!(index >= 0 && index < this.length)) return undefined;
    let s = this.decoded[index];
    if (s === undefined) {
      s = decodeUtf8(this.bytes, this.starts[index] as number, (this.starts[index + 1] as number) - 1);
      this.decoded[index] = s;
    }
    return s;
  }
}

/** Strings: a count, their sizes (NUL included) in reverse order, then the data in order. */
function readStrings(section: ByteReader): StringTable {
  const r = new ByteReader(section.bytes, section.origin, section.pos, section.end);
  const count = r.count("the number of strings");
  const sizes = new Array<number>(count);
  for (let i = count - 1; i >= 0; i--) sizes[i] = r.varint("a string size");
  const starts = new Int32Array(count + 1);
  let at = r.pos;
  for (let i = 0; i < count; i++) {
    const size = sizes[i] as number;
    if (size < 1 || at + size > r.end) throw r.fail(`string ${i} of ${size} bytes inside the string section`, at);
    if (r.bytes[at + size - 1] !== 0) throw r.fail(`string ${i} ending in a NUL byte`, at + size - 1);
    starts[i] = at;
    at += size;
  }
  starts[count] = at;
  if (at !== r.end) throw r.fail("the string data to end with the section", at);
  return new StringTable(r.bytes, starts);
}

function stringAt(r: ByteReader, strings: StringTable, index: number, what: string, at: number): string {
  const s = strings.at(index);
  if (s === undefined) throw r.fail(`${what}: a string index below ${strings.length}, found ${index}`, at);
  return s;
}

function readDialects(section: ByteReader, strings: StringTable, version: number) {
  const r = new ByteReader(section.bytes, section.origin, section.pos, section.end);
  const count = r.count("the number of dialects");
  const dialects: Dialect[] = [];
  for (let i = 0; i < count; i++) {
    const at = r.pos;
    if (version < VERSION.dialectVersioning) {
      dialects.push({ name: stringAt(r, strings, r.varint("a dialect name"), "a dialect name", at), version: null });
      continue;
    }
    const [nameIndex, hasVersion] = r.varintFlag("a dialect name");
    const name = stringAt(r, strings, nameIndex, "a dialect name", at);
    let versionReader: ByteReader | null = null;
    if (hasVersion) {
      const sectionAt = r.pos;
      const { id, data } = readSection(r);
      if (id !== SECTION.dialectVersions) throw r.fail(`a dialect version section for ${name}`, sectionAt);
      versionReader = data;
    }
    dialects.push({ name, version: versionReader });
  }
  const opNames: OpName[] = [];
  if (version >= VERSION.elideUnknownBlockArgLocation) r.varint("the number of operation names");
  while (!r.atEnd()) {
    const at = r.pos;
    const dialectIndex = r.varint("an operation name's dialect");
    const dialect = dialects[dialectIndex];
    if (!dialect) throw r.fail(`a dialect index below ${dialects.length}, found ${dialectIndex}`, at);
    const n = r.count("the number of operation names of a dialect");
    for (let i = 0; i < n; i++) {
      const nameAt = r.pos;
      let registered: boolean | null = null;
      let index: number;
      if (version >= VERSION.nativeProperties) [index, registered] = r.varintFlag("an operation name");
      else index = r.varint("an operation name");
      const short = stringAt(r, strings, index, "an operation name", nameAt);
      opNames.push({ dialect, name: short === "" ? dialect.name : `${dialect.name}.${short}`, registered });
    }
  }
  return { dialects, opNames };
}

/** Properties: a count, then that many `size, bytes` blobs; an op refers to one by index. */
function readPropertyOffsets(section: ByteReader | null): number[] {
  if (!section || section.remaining === 0) return [];
  const r = new ByteReader(section.bytes, section.origin, section.pos, section.end);
  const count = r.count("the number of property blobs");
  const offsets: number[] = [];
  for (let i = 0; i < count; i++) {
    offsets.push(r.pos);
    const size = r.varint("a property blob size");
    r.take(size, "a property blob");
  }
  if (!r.atEnd()) throw r.fail("the properties section to end after its blobs");
  return offsets;
}
