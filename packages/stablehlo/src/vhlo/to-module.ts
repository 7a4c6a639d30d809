import type { AttrTypeTable } from "../bytecode/attr-types.ts";
import type { ByteReader } from "../bytecode/byte-reader.ts";
import type { OpName } from "../bytecode/container.ts";
import type { RawOp, RawRegion } from "../bytecode/ir.ts";
import type { RawAttr, RawType } from "../bytecode/values.ts";
import { ModuleError } from "../errors.ts";
import type { Attr, BlockArg, Func, Module, Op, Region, ValueType } from "../ir.ts";
import { toAttr } from "./attributes.ts";
import { isKnownVhloOp } from "./known-ops.ts";
import { convertOpAttributes } from "./op-conversions.ts";
import { propertyNames } from "./op-attributes.ts";
import { toValueType } from "./types.ts";

export interface ConvertOptions {
  readonly origin: string;
  /** The engine's reading: types it cannot run are UNSUPPORTED (else kept as `other`). */
  readonly strict: boolean;
}

/**
 * VHLO -> StableHLO, into the program model the text parser produces: versioned names become
 * StableHLO's, `func_v1` / `call_v1` / `return_v1` become func's, attributes take their
 * StableHLO form (op-conversions.ts), and value names come from the bytecode's numbering.
 */
export function toModule(top: RawOp[], table: AttrTypeTable, options: ConvertOptions): Module {
  const module = top.length === 1 && top[0]?.name === "builtin.module" ? top[0] : null;
  const ops = module ? (module.regions[0]?.blocks[0]?.ops ?? []) : top;
  const c = new Converter(table, options);
  const funcs = ops.map((op) => c.func(op));
  return { name: module ? moduleName(module, table) : null, funcs };
}

function moduleName(op: RawOp, table: AttrTypeTable): string | null {
  const fromDict = op.attrs.find(([k]) => k === "sym_name")?.[1];
  if (fromDict?.k === "string") return fromDict.value;
  if (op.properties) {
    // builtin.module's properties: sym_name and sym_visibility, both optional.
    const r = op.properties.reader();
    const [index, present] = r.varintFlag("builtin.module's sym_name");
    if (present) {
      const a = table.attrAt(index, r, r.pos);
      if (a.k === "string") return a.value;
    }
  }
  return null;
}

/** What an op name converts to, worked out once per name. */
interface OpKind {
  readonly short: string;
  readonly stablehlo: string;
  readonly isReturn: boolean;
}

/** The attributes of an op without any: one shared empty record (the model is never mutated). */
const NO_ATTRIBUTES: Record<string, Attr> = Object.freeze({}) as Record<string, Attr>;

class Converter {
  private readonly valueTypes = new Map<RawType, ValueType>();
  private readonly kinds = new Map<string, OpKind>();
  /**
   * Converted attributes per op name and encoding (property blob index, or the attribute
   * dictionary, itself unique in the file): ResNet-50's 492 broadcasts have a handful of
   * distinct ones, each converted once and shared.
   */
  private readonly converted = new Map<OpName, Map<number | readonly [string, RawAttr][], Record<string, Attr>>>();

  constructor(
    private readonly table: AttrTypeTable,
    private readonly options: ConvertOptions,
  ) {}

  private fail(op: RawOp, expected: string): ModuleError {
    const { origin } = this.options;
    return new ModuleError("MODULE_INVALID", `${origin}: ${op.name} at offset ${op.offset}: expected ${expected}`, {
      origin,
      offset: op.offset,
      op: op.name,
      expected,
    });
  }

  /** Types are shared objects of the type table, so each converts once. */
  private type(t: RawType): ValueType {
    let v = this.valueTypes.get(t);
    if (!v) {
      v = toValueType(t, this.options.strict);
      this.valueTypes.set(t, v);
    }
    return v;
  }

  private kind(op: RawOp): OpKind {
    let k = this.kinds.get(op.name);
    if (k) return k;
    if (!op.name.startsWith("vhlo.")) throw this.fail(op, "a vhlo operation");
    const short = op.name.slice("vhlo.".length);
    if (!isKnownVhloOp(short)) {
      throw this.fail(op, "a VHLO operation this reader knows (the artifact is from a newer StableHLO than it reads)");
    }
    const base = short.replace(/_v\d+$/, "");
    k = { short, stablehlo: base === "call" ? "func.call" : `stablehlo.${base}`, isReturn: base === "return" };
    this.kinds.set(op.name, k);
    return k;
  }

  /** The op's inherent attributes by name: the dictionary (format < 5) or its properties. */
  private inherent(op: RawOp): Map<string, RawAttr> {
    const out = new Map<string, RawAttr>(op.attrs);
    if (op.properties) {
      const short = op.name.slice("vhlo.".length);
      const names = propertyNames(short);
      if (!names) throw this.fail(op, "no properties on an op without attributes");
      const r: ByteReader = op.properties.reader();
      const blob = { pos: r.pos };
      for (const name of names) out.set(name, this.table.attr(r, `${op.name}'s ${name}`));
      if (!r.atEnd()) throw r.fail(`${op.name}'s properties to end after its ${names.length} attributes`, blob.pos);
    }
    return out;
  }

  private attributes(op: RawOp, kind: OpKind): Record<string, Attr> {
    const convert = () => convertOpAttributes(kind.short, this.inherent(op), (a) => toAttr(a, this.options.origin));
    const key = op.attrs.length === 0 ? op.propertiesIndex : op.properties === null ? op.attrs : null;
    if (key === null) return convert();
    let byKey = this.converted.get(op.opName);
    if (!byKey) {
      byKey = new Map();
      this.converted.set(op.opName, byKey);
    }
    let attrs = byKey.get(key);
    if (!attrs) {
      attrs = convert();
      // Dense tensors stay one per op, as the text parser makes them: a constant's storage is
      // the value the plan hands out, and two ops must not share it.
      if (holdsDense(attrs)) return attrs;
      byKey.set(key, attrs);
    }
    return attrs;
  }

  func(op: RawOp): Func {
    if (op.name !== "vhlo.func_v1") throw this.fail(op, "a vhlo.func_v1 at module level");
    const a = this.inherent(op);
    const sym = a.get("sym_name");
    const fnType = a.get("function_type");
    if (sym?.k !== "string") throw this.fail(op, "a sym_name string");
    if (fnType?.k !== "type" || fnType.type.k !== "function") throw this.fail(op, "a function_type");
    const visibility = a.get("sym_visibility");
    const isPublic = !(visibility?.k === "string" && visibility.value === "private");
    const resultTypes = fnType.type.results.map((t) => this.type(t));
    const block = op.regions[0]?.blocks[0];
    if (!block) {
      const args = fnType.type.inputs.map((t, i) => ({ name: `%arg${i}`, type: this.type(t) }));
      return { name: sym.value, isPublic, args, resultTypes, body: [] };
    }
    const args = this.blockArgs(block.args);
    return { name: sym.value, isPublic, args, resultTypes, body: this.ops(block.ops, true) };
  }

  private blockArgs(args: RawRegion["blocks"][number]["args"]): BlockArg[] {
    return args.map((arg) => ({ name: arg.name, type: this.type(arg.type) }));
  }

  private region(op: RawOp, region: RawRegion): Region {
    if (region.blocks.length > 1) throw this.fail(op, "regions of one block (StableHLO has no control flow graphs)");
    const block = region.blocks[0];
    if (!block) return { args: [], ops: [] };
    return { args: this.blockArgs(block.args), ops: this.ops(block.ops, false) };
  }

  // Loops rather than map() with a callback: this runs once per op and per operand.
  private ops(raw: RawOp[], inFunc: boolean): Op[] {
    const out = new Array<Op>(raw.length);
    for (let i = 0; i < raw.length; i++) out[i] = this.op(raw[i] as RawOp, inFunc);
    return out;
  }

  private types(raw: RawType[]): ValueType[] {
    const out = new Array<ValueType>(raw.length);
    for (let i = 0; i < raw.length; i++) out[i] = this.type(raw[i] as RawType);
    return out;
  }

  private op(op: RawOp, inFunc: boolean): Op {
    const kind = this.kind(op);
    const name = kind.isReturn ? (inFunc ? "func.return" : "stablehlo.return") : kind.stablehlo;
    const attrs = op.attrs.length > 0 || op.properties !== null ? this.attributes(op, kind) : NO_ATTRIBUTES;
    const operandTypes = this.types(op.operandTypes);
    // A return's types are its operands' (`func.return %0 : tensor<f32>`), as the text parser has them.
    const resultTypes = kind.isReturn ? operandTypes : this.types(op.resultTypes);
    const regions = op.regions.length === 0 ? [] : op.regions.map((r) => this.region(op, r));
    return {
      name,
      results: op.results,
      operands: op.operands,
      attrs,
      regions,
      resultTypes,
      operandTypes,
      offset: op.offset,
    };
  }
}

function holdsDense(a: Attr | Record<string, Attr>): boolean {
  if (typeof a !== "object" || a === null) return false;
  if (Array.isArray(a)) return a.some(holdsDense);
  if ("data" in a && ArrayBuffer.isView(a.data)) return true;
  return Object.values(a).some(holdsDense);
}
