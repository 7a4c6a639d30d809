import { type CompileOptions, XlaserveError } from "@xlaserve/core";
import { ProtoWriter } from "./protobuf.ts";

/**
 * XLA debug options that make a GPU compile reproducible: no autotuning (the autotuner times
 * candidate kernels and may pick another one on each compile) and no nondeterministic ops
 * (atomics-based scatter / reductions). Passed as env_option_overrides, which XLA applies to
 * DebugOptions by field name.
 */
export const DETERMINISTIC_FLAGS: Readonly<Record<string, boolean | number>> = {
  xla_gpu_autotune_level: 0,
  xla_gpu_exclude_nondeterministic_ops: true,
};

/**
 * Serializes an xla.CompileOptionsProto. Fields written (numbers from xla/pjrt/proto/compile_options.proto):
 *
 * CompileOptionsProto
 *   3  executable_build_options  ExecutableBuildOptionsProto (below)
 *   7  env_option_overrides      map<string, OptionOverrideProto>; one entry per XLA debug option
 *                                (entry: 1 key = option name, 2 value = OptionOverrideProto)
 * ExecutableBuildOptionsProto
 *   1  device_ordinal  int64: -1 = let the client place the program (the executing device is
 *                      chosen at execute time by the device assignment below)
 *   4  num_replicas    int64: 1. Required: empty options abort XLA (CHECK replica_count > 0).
 *   5  num_partitions  int64: 1 (no SPMD partitioning)
 * OptionOverrideProto (oneof value)
 *   1  string_field, 2 bool_field, 3 int_field, 4 double_field
 *
 * Nothing else is set, so the bytes depend only on `options` and are stable across runs.
 */
export function compileOptionsProto(options: CompileOptions = {}): Uint8Array {
  const overrides: Record<string, string | number | boolean> = {
    ...(options.deterministic ? DETERMINISTIC_FLAGS : {}),
    ...(options.xlaFlags ?? {}),
  };
  const w = new ProtoWriter();
  w.message(3, (b) => {
    b.int(1, -1);
    b.int(4, 1);
    b.int(5, 1);
  });
  for (const name of Object.keys(overrides).sort()) {
    const value = overrides[name];
    w.message(7, (entry) => {
      entry.string(1, name);
      entry.message(2, (v) => {
        if (typeof value === "string") v.string(1, value);
        else if (typeof value === "boolean") v.bool(2, value);
        else if (Number.isInteger(value)) v.int(3, value as number);
        else if (typeof value === "number") v.double(4, value);
        else throw new XlaserveError("INVALID_ARGUMENT", `XLA option ${name} has an unsupported value`, { name });
      });
    });
  }
  return w.finish();
}
