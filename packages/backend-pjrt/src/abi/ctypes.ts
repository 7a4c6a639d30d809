/**
 * C types and the x86-64 System V layout rules, so that struct offsets are computed, never
 * hand-written. Every scalar's alignment equals its size on this ABI; a struct or union is
 * aligned to its strictest member and padded to a multiple of that alignment.
 */

export type ScalarKind = "u8" | "bool" | "i32" | "u32" | "enum" | "f32" | "i64" | "u64" | "size_t" | "ptr" | "fnptr";

export interface ScalarType {
  readonly kind: "scalar";
  readonly scalar: ScalarKind;
  readonly size: number;
  readonly align: number;
}

export interface AggregateType {
  readonly kind: "struct" | "union";
  readonly name: string;
  readonly size: number;
  readonly align: number;
  readonly fields: readonly FieldLayout[];
}

export type CType = ScalarType | AggregateType;

export interface FieldLayout {
  readonly name: string;
  readonly type: CType;
  readonly offset: number;
}

const SCALAR_SIZES: Record<ScalarKind, number> = {
  u8: 1,
  bool: 1, // C99 _Bool is one byte on SysV.
  i32: 4,
  u32: 4,
  enum: 4, // every PJRT enum fits an int, so the compiler picks a 4-byte int.
  f32: 4,
  i64: 8,
  u64: 8,
  size_t: 8,
  ptr: 8,
  fnptr: 8,
};

function scalar(kind: ScalarKind): ScalarType {
  const size = SCALAR_SIZES[kind];
  return { kind: "scalar", scalar: kind, size, align: size };
}

/** The C types the PJRT header uses, by the name a reader of the header expects. */
export const C = {
  u8: scalar("u8"),
  bool: scalar("bool"),
  int: scalar("i32"),
  i32: scalar("i32"),
  u32: scalar("u32"),
  enum: scalar("enum"),
  float: scalar("f32"),
  i64: scalar("i64"),
  u64: scalar("u64"),
  size_t: scalar("size_t"),
  ptr: scalar("ptr"),
  fnptr: scalar("fnptr"),
} as const;

export type FieldSpec = readonly [name: string, type: CType];

function alignUp(value: number, align: number): number {
  return Math.ceil(value / align) * align;
}

/** Lays out a struct: each field at the next offset aligned for it, the whole padded at the end. */
export function layoutStruct(name: string, fields: readonly FieldSpec[]): AggregateType {
  let offset = 0;
  let align = 1;
  const laid: FieldLayout[] = [];
  const seen = new Set<string>();
  for (const [field, type] of fields) {
    if (seen.has(field)) throw new Error(`struct ${name} declares ${field} twice`);
    seen.add(field);
    offset = alignUp(offset, type.align);
    laid.push({ name: field, type, offset });
    offset += type.size;
    align = Math.max(align, type.align);
  }
  return { kind: "struct", name, size: alignUp(offset, align), align, fields: laid };
}

/** Lays out a union: every member at offset 0, size of the largest padded to the strictest alignment. */
export function layoutUnion(name: string, members: readonly FieldSpec[]): AggregateType {
  let size = 0;
  let align = 1;
  for (const [, type] of members) {
    size = Math.max(size, type.size);
    align = Math.max(align, type.align);
  }
  const fields = members.map(([field, type]) => ({ name: field, type, offset: 0 }));
  return { kind: "union", name, size: alignUp(size, align), align, fields };
}
