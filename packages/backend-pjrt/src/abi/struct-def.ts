import { type AggregateType, type CType, type FieldLayout, type FieldSpec, layoutStruct } from "./ctypes.ts";

/**
 * One C struct of the PJRT API: its computed layout plus the `struct_size` value the API
 * expects. PJRT_STRUCT_SIZE is offsetof(last field) + sizeof(last field), i.e. *without* the
 * trailing padding that sizeof() includes; callers write it into the struct's first field so the
 * plugin knows how many fields this side knows.
 */
export interface StructDef {
  readonly name: string;
  readonly layout: AggregateType;
  /** sizeof(struct). */
  readonly size: number;
  /** PJRT_STRUCT_SIZE(struct, last_field). */
  readonly structSize: number;
  /** Whether the first field is `size_t struct_size` (nearly every PJRT struct). */
  readonly hasStructSize: boolean;
  field(name: string): FieldLayout;
}

export function defineStruct(name: string, fields: readonly FieldSpec[]): StructDef {
  const layout = layoutStruct(name, fields);
  const byName = new Map(layout.fields.map((f) => [f.name, f]));
  const last = layout.fields[layout.fields.length - 1];
  if (!last) throw new Error(`struct ${name} has no fields`);
  return {
    name,
    layout,
    size: layout.size,
    structSize: last.offset + last.type.size,
    hasStructSize: layout.fields[0]?.name === "struct_size",
    field(field: string): FieldLayout {
      const found = byName.get(field);
      if (!found) throw new Error(`struct ${name} has no field ${field}`);
      return found;
    },
  };
}

/** Returns the struct as a C type, for nesting one struct inside another. */
export function asType(def: StructDef): CType {
  return def.layout;
}
