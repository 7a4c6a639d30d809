#!/usr/bin/env python3
"""XLA CPU's own bits for one StableHLO unary op (tanh, exponential, logistic) on f32, bf16 or f16.

The op is compiled from StableHLO text (the same op the CPU engine reads, not a JAX wrapper that
might lower it differently) by the JAX installation's XLA CPU client.

    xla_unary_bits.py stream <op> <type>      every bit pattern of the type in order, the results'
                                              bits on stdout (raw little-endian, 2^24 elements a
                                              chunk for f32: 16 GiB in all, meant for a pipe)
    xla_unary_bits.py fixture <out.json>      a few thousand inputs of each op and type (special
                                              values, clamp and threshold neighbourhoods, seeded
                                              random values at several scales) with XLA's bits

The fixture is what packages/backend-reactant/test/xla-f32-math.test.ts checks the engine against.
"""

from __future__ import annotations

import base64
import json
import os
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.extend  # noqa: E402,F401
import numpy as np  # noqa: E402
from jax._src.interpreters import mlir  # noqa: E402
from jax._src.lib import xla_client  # noqa: E402
from jax._src.lib.mlir import ir  # noqa: E402

OPS = ("tanh", "exponential", "logistic")
TYPES = {"f32": (np.float32, np.uint32), "bf16": (None, np.uint16), "f16": (np.float16, np.uint16)}
CHUNK = 1 << 24
COMPILED: dict = {}


def numpy_type(t: str):
    if t == "bf16":
        import ml_dtypes

        return ml_dtypes.bfloat16
    return TYPES[t][0]


def compiled(op: str, t: str, n: int):
    key = (op, t, n)
    if key not in COMPILED:
        if op not in OPS:
            raise SystemExit(f"unknown op {op!r}: one of {', '.join(OPS)}")
        if t not in TYPES:
            raise SystemExit(f"unknown type {t!r}: one of {', '.join(TYPES)}")
        ty = f"tensor<{n}x{t}>"
        src = f"func.func public @main(%x: {ty}) -> {ty} {{\n  %0 = stablehlo.{op} %x : {ty}\n  return %0 : {ty}\n}}"
        backend = jax.extend.backend.get_backend("cpu")
        with mlir.make_ir_context():
            module = ir.Module.parse(src)
            code = mlir.module_to_bytecode(module)
        COMPILED[key] = backend.compile_and_load(code, jax.devices("cpu")[:1], xla_client.CompileOptions())
    return COMPILED[key]


def run(op: str, t: str, bits: np.ndarray) -> np.ndarray:
    """XLA's result bits for inputs given as bits (uint32 for f32, uint16 otherwise)."""
    exe = compiled(op, t, bits.size)
    x = jax.device_put(bits.view(numpy_type(t)))
    (out,) = exe.execute_sharded([x]).disassemble_into_single_device_arrays()
    return np.asarray(out[0]).view(TYPES[t][1])


def stream(op: str, t: str) -> None:
    total = 1 << (32 if t == "f32" else 16)
    step = min(CHUNK, total)
    sink = sys.stdout.buffer
    for start in range(0, total, step):
        bits = np.arange(start, start + step, dtype=np.uint64).astype(TYPES[t][1])
        sink.write(run(op, t, bits).tobytes())
    sink.flush()


def f32_bits(values) -> np.ndarray:
    return np.asarray(values, dtype=np.float32).view(np.uint32)


def neighbours(x: float, count: int) -> list[int]:
    """The `count` f32 bit patterns either side of f32(x), x's included."""
    b = int(f32_bits([x])[0])
    return [b + d for d in range(-count, count + 1) if 0 <= b + d < 1 << 32]


def f32_inputs() -> np.ndarray:
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5]
    words = list(f32_bits(special))
    words += [0x7FC00001, 0xFFC00000, 0x7F800001, 0x00000001, 0x80000001, 0x007FFFFF, 0x00800000, 0x7F7FFFFF]
    # Thresholds: tanh's small cut-off, clamp and saturation; exp's clamps and where its scale
    # leaves the normal range; the overflow and underflow edges of the result.
    for edge in [4e-4, 7.99881172180175781, 7.90531110763549805, 9.0, 20.0, 87.8, 88.8, 88.72284, 87.33654,
                 87.68, 103.97, 0.34657359, 0.125]:
        words += neighbours(edge, 12) + neighbours(-edge, 12)
    rng = np.random.default_rng(20261202)
    for scale in [1e-3, 0.1, 1.0, 3.0, 10.0, 40.0]:
        words += list(f32_bits(rng.standard_normal(200) * scale))
    # Random patterns over every exponent, subnormals and NaNs included.
    words += list(rng.integers(0, 1 << 32, 400, dtype=np.uint64).astype(np.uint32))
    return np.asarray(words, dtype=np.uint32)


def half_inputs() -> np.ndarray:
    """Every 29th of the 65536 patterns (both signs, every exponent, NaNs) and the specials."""
    special = [0x0000, 0x8000, 0x0001, 0x8001, 0x7C00, 0xFC00, 0x7F80, 0xFF80, 0x7E00, 0x7FC0]
    return np.concatenate([np.arange(0, 1 << 16, int(os.environ.get("HALF_STRIDE", "29"))), special]).astype(np.uint16)


def packed(a: np.ndarray) -> str:
    return base64.b64encode(a.astype(a.dtype.newbyteorder("<")).tobytes()).decode()


def fixture(path: str) -> None:
    """Inputs per type and outputs per op and type, as base64 of little-endian bit arrays."""
    result: dict = {"jax": jax.__version__, "inputs": {}, "outputs": {}}
    for t in TYPES:
        inputs = f32_inputs() if t == "f32" else half_inputs()
        result["inputs"][t] = packed(inputs)
        for op in OPS:
            result["outputs"][f"{op}/{t}"] = packed(run(op, t, inputs))
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")


def main() -> None:
    args = sys.argv[1:]
    if len(args) == 3 and args[0] == "stream":
        stream(args[1], args[2])
    elif len(args) == 2 and args[0] == "fixture":
        fixture(args[1])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
