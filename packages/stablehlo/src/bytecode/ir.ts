import type { AttrTypeTable } from "./attr-types.ts";
import { ByteReader } from "./byte-reader.ts";
import { type Container, type OpName, SECTION, VERSION, readSection } from "./container.ts";
import type { RawAttr, RawType } from "./values.ts";

/** An operation as the IR section holds it, attributes still in their dialect's form. */
export interface RawOp {
  readonly name: string;
  readonly opName: OpName;
  /** Absolute file offset of the op, for error messages. */
  readonly offset: number;
  /** The attribute dictionary (all attributes before format 5; discardable ones after). */
  readonly attrs: [string, RawAttr][];
  /** Properties: the op's property blob (decoded by the dialect layer). */
  readonly properties: PropertyBlob | null;
  /**
   * The blob's index in the properties section, or -1. Writers store each distinct blob once,
   * so ops with the same index have the same inherent attributes.
   */
  readonly propertiesIndex: number;
  readonly resultTypes: RawType[];
  /** Value names: `%v<n>`, unique in the module. */
  readonly results: string[];
  readonly operands: string[];
  /** The operands' types, from their definitions. */
  readonly operandTypes: RawType[];
  readonly regions: RawRegion[];
}

export interface RawBlock {
  readonly args: { readonly name: string; readonly type: RawType }[];
  readonly ops: RawOp[];
}

export interface RawRegion {
  readonly blocks: RawBlock[];
}

/** Where an op's property blob lies; each `reader()` is a fresh cursor over it. */
export class PropertyBlob {
  constructor(
    readonly bytes: Uint8Array,
    readonly origin: string,
    readonly start: number,
    readonly end: number,
  ) {}

  reader(): ByteReader {
    return new ByteReader(this.bytes, this.origin, this.start, this.end);
  }
}

const MASK = {
  attrs: 0x01,
  results: 0x02,
  operands: 0x04,
  successors: 0x08,
  regions: 0x10,
  useListOrders: 0x20,
  properties: 0x40,
} as const;

/**
 * Values of one isolated-from-above scope. A region reserves the index range after those in
 * use when it starts and frees it when it ends, so sibling regions reuse indices; each
 * definition gets a name of its own.
 */
interface Scope {
  size: number;
  readonly names: (string | undefined)[];
  /** The type of each live value, beside its name. */
  readonly types: RawType[];
}

/**
 * Reads the IR section: the top-level block (usually one `builtin.module`), ops with their
 * regions, nested isolated regions stored as their own sections (format 2 and later), block
 * arguments with or without locations, and use-list orders (read and dropped: they only
 * order uses).
 */
export class IrReader {
  private nextName = 0;
  private readonly blobs: (PropertyBlob | undefined)[] = [];
  private readonly valueLimit: number;

  constructor(
    private readonly c: Container,
    private readonly table: AttrTypeTable,
  ) {
    // No more values than the IR section has bytes: each is defined by at least one byte.
    this.valueLimit = (c.sections[SECTION.ir] as ByteReader).remaining + 16;
  }

  readTopLevel(): RawOp[] {
    const section = this.c.sections[SECTION.ir] as ByteReader;
    const r = new ByteReader(section.bytes, section.origin, section.pos, section.end);
    const scope = this.newScope();
    const [opCount, hasArgs] = r.varintFlag("the number of top-level operations");
    if (hasArgs) throw r.fail("a top-level block without arguments");
    const ops: RawOp[] = [];
    // The top-level block reserves no values: its ops' results are never referenced.
    const base: RegionState = { scope, base: 0, next: 0, limit: 0, topLevel: true };
    for (let i = 0; i < opCount; i++) ops.push(this.readOp(r, base, 0));
    if (!r.atEnd()) throw r.fail("the IR section to end after its top-level operations");
    return ops;
  }

  /** Property blob `index`, located once: ops with the same inherent attributes share one. */
  private blob(r: ByteReader, index: number, at: number): PropertyBlob {
    const start = this.c.properties[index];
    if (start === undefined) throw r.fail(`a properties index below ${this.c.properties.length}, found ${index}`, at);
    const section = this.c.sections[SECTION.properties] as ByteReader;
    const cursor = new ByteReader(section.bytes, section.origin, start, section.end);
    const size = cursor.varint("a property blob size");
    const data = cursor.sub(size, "a property blob");
    const blob = new PropertyBlob(data.bytes, data.origin, data.pos, data.end);
    this.blobs[index] = blob;
    return blob;
  }

  private newScope(): Scope {
    return { size: 0, names: [], types: [] };
  }

  private readOp(r: ByteReader, region: RegionState, depth: number): RawOp {
    if (depth > 256) throw r.fail("regions nested at most 256 deep");
    const offset = r.pos;
    const nameIndex = r.varint("an operation name index");
    const opName = this.c.opNames[nameIndex];
    if (!opName) throw r.fail(`an operation name index below ${this.c.opNames.length}, found ${nameIndex}`, offset);
    const mask = r.byte("an operation's encoding mask");
    if (mask & 0x80) throw r.fail(`an operation encoding mask below 0x80, found 0x${mask.toString(16)}`, r.pos - 1);
    r.varint("an operation's location"); // debug locations are not part of the program model
    let attrs: [string, RawAttr][] = [];
    if (mask & MASK.attrs) {
      const at = r.pos;
      const dict = this.table.attr(r, "an operation's attribute dictionary");
      if (dict.k !== "dict") throw r.fail(`a dictionary of attributes for ${opName.name}`, at);
      attrs = dict.entries;
    }
    let properties: PropertyBlob | null = null;
    let propertiesIndex = -1;
    if (mask & MASK.properties) {
      const at = r.pos;
      if (opName.registered === null) throw r.fail("no properties before bytecode format 5", at);
      if (opName.registered) {
        const index = r.varint("a properties index");
        properties = this.blobs[index] ?? this.blob(r, index, at);
        propertiesIndex = index;
      } else {
        const dict = this.table.attr(r, "an unregistered operation's properties");
        if (dict.k === "dict") attrs = [...attrs, ...dict.entries];
      }
    }
    const resultTypes: RawType[] = [];
    if (mask & MASK.results) {
      const n = r.count("the number of results");
      for (let i = 0; i < n; i++) resultTypes.push(this.table.type(r, "a result type"));
    }
    const operands: string[] = [];
    const operandTypes: RawType[] = [];
    if (mask & MASK.operands) {
      const n = r.count("the number of operands");
      const scope = region.scope;
      for (let i = 0; i < n; i++) {
        const index = this.use(r, scope);
        operands.push(scope.names[index] as string);
        operandTypes.push(scope.types[index] as RawType);
      }
    }
    if (mask & MASK.successors)
      throw r.fail(`an operation without successors (${opName.name} branches; StableHLO has none)`, offset);
    if (mask & MASK.useListOrders && this.c.version >= VERSION.useListOrdering)
      skipUseListOrders(r, resultTypes.length);
    let regionCount = 0;
    let isolated = false;
    if (mask & MASK.regions) {
      [regionCount, isolated] = r.varintFlag("the number of regions");
      if (regionCount > r.remaining) throw r.fail(`at most ${r.remaining} regions`);
    }
    const results = new Array<string>(resultTypes.length);
    for (let i = 0; i < results.length; i++) results[i] = this.define(r, region, resultTypes[i] as RawType);
    const regions: RawRegion[] = [];
    if (regionCount > 0) {
      let rr = r;
      let scope = region.scope;
      if (isolated) {
        scope = this.newScope();
        if (this.c.version >= VERSION.lazyLoading) {
          const at = r.pos;
          const { id, data } = readSection(r);
          if (id !== SECTION.ir) throw r.fail(`an IR section holding the regions of ${opName.name}`, at);
          rr = data;
        }
      }
      for (let i = 0; i < regionCount; i++) regions.push(this.readRegion(rr, scope, depth + 1));
      if (rr !== r && !rr.atEnd()) throw rr.fail(`the regions of ${opName.name} to end their section`);
    }
    return {
      name: opName.name,
      opName,
      offset,
      attrs,
      properties,
      propertiesIndex,
      resultTypes,
      results,
      operands,
      operandTypes,
      regions,
    };
  }

  private readRegion(r: ByteReader, scope: Scope, depth: number): RawRegion {
    const blockCount = r.varint("the number of blocks in a region");
    if (blockCount === 0) return { blocks: [] };
    if (blockCount > r.remaining) throw r.fail(`at most ${r.remaining} blocks`);
    const valueCount = r.varint("the number of values in a region");
    if (scope.size + valueCount > this.valueLimit) throw r.fail(`a region with at most ${this.valueLimit} values`);
    const state: RegionState = { scope, base: scope.size, next: scope.size, limit: scope.size + valueCount };
    scope.size += valueCount;
    const blocks: RawBlock[] = [];
    for (let b = 0; b < blockCount; b++) {
      const [opCount, hasArgs] = r.varintFlag("the number of operations in a block");
      const args: { name: string; type: RawType }[] = [];
      if (hasArgs) {
        const n = r.count("the number of block arguments");
        for (let i = 0; i < n; i++) {
          let type: RawType;
          if (this.c.version >= VERSION.elideUnknownBlockArgLocation) {
            const at = r.pos;
            const [typeIndex, hasLoc] = r.varintFlag("a block argument type");
            type = this.table.typeAt(typeIndex, r, at);
            if (hasLoc) r.varint("a block argument location");
          } else {
            type = this.table.type(r, "a block argument type");
            r.varint("a block argument location");
          }
          args.push({ name: this.define(r, state, type), type });
        }
        if (this.c.version >= VERSION.useListOrdering) {
          const hasOrders = r.byte("a block's use-list order flag");
          if (hasOrders) skipUseListOrders(r, n);
        }
      }
      if (opCount > r.remaining) throw r.fail(`at most ${r.remaining} operations in a block`);
      const ops: RawOp[] = [];
      for (let i = 0; i < opCount; i++) ops.push(this.readOp(r, state, depth));
      blocks.push({ args, ops });
    }
    scope.size -= valueCount;
    scope.names.fill(undefined, state.base, state.limit);
    return { blocks };
  }

  private define(r: ByteReader, region: RegionState, type: RawType): string {
    if (region.topLevel) return `%v${this.nextName++}`;
    if (region.next >= region.limit) {
      throw r.fail(`at most ${region.limit - region.base} values defined in this region`);
    }
    const name = `%v${this.nextName++}`;
    region.scope.types[region.next] = type;
    region.scope.names[region.next++] = name;
    return name;
  }

  /** An operand: the index of a live value of the scope. */
  private use(r: ByteReader, scope: Scope): number {
    const at = r.pos;
    const index = r.varint("an operand's value index");
    const name = index < scope.size ? scope.names[index] : undefined;
    if (name === undefined)
      throw r.fail(`an operand defined before its use (value index ${index} of ${scope.size})`, at);
    return index;
  }
}

interface RegionState {
  readonly topLevel?: boolean;
  readonly scope: Scope;
  readonly base: number;
  next: number;
  readonly limit: number;
}

function skipUseListOrders(r: ByteReader, rangeSize: number): void {
  const count = rangeSize > 1 ? r.count("the number of use-list orders") : 1;
  for (let i = 0; i < count; i++) {
    if (rangeSize > 1) r.varint("a use-list order's value");
    const [n] = r.varintFlag("a use-list order's length");
    if (n > r.remaining) throw r.fail(`a use-list order of at most ${r.remaining} entries`);
    for (let j = 0; j < n; j++) r.varint("a use-list index");
  }
}
