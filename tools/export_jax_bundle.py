#!/usr/bin/env python3
"""Export a JAX function and its parameters as a ReactantServer 2.0 bundle that xlaserve serves.

Library use:

    from export_jax_bundle import export_bundle
    export_bundle(apply, params, {"x": ((64,), "f32")}, "bundles/mlp", batch_sizes=[1, 8])

`apply(params, *inputs)` returns one array or a tuple of arrays. Each input is (shape, dtype),
the dtype as the manifest writes it ("f32", "i32", "bf16", ...) or as numpy names it ("float32").
Inputs are given without their batch axis; the exporter adds a leading batch axis of each compiled size. Per batch size it writes
one module (model.b{N}.mlir, or model.mlir when there is one size), lowered with every weight as a
parameter after the inputs, in the order recorded in weights.safetensors'
__metadata__.argument_order. It also runs each module through XLA and writes
reference.safetensors: `b{N}/inputs/<name>` (seeded random inputs), `b{N}/outputs/<name>` (XLA on
the CPU) and, where a GPU is present, `b{N}/outputs_gpu/<name>` (XLA on the GPU), so any backend can
be checked against XLA.

Command line: `python3 tools/export_jax_bundle.py <example> <out_dir> [--portable]` exports one of
the built-in models (mlp, cnn, transformer, resnet50); see tools/models/.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import re
import sys
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

# Source locations in the exported modules name the exporter's files; keep them relative to the
# repository so a bundle does not carry the path of the machine that exported it.
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
jax.config.update("jax_hlo_source_file_canonicalization_regex", "^" + re.escape(REPO_ROOT + os.sep))

MANIFEST_DTYPES = {
    "float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16",
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64", "bool": "bool",
}
SAFETENSORS_DTYPES = {
    "float32": "F32", "float64": "F64", "float16": "F16", "bfloat16": "BF16",
    "int8": "I8", "int16": "I16", "int32": "I32", "int64": "I64",
    "uint8": "U8", "uint16": "U16", "uint32": "U32", "uint64": "U64", "bool": "BOOL",
}
# Letters for non-batch axes; 'n' and 'b' are reserved batch markers in the manifest.
AXIS_LETTERS = "cdefghijklmopqrstuvwxyz"


def write_safetensors(path: str, tensors: dict[str, np.ndarray], metadata: dict[str, str] | None = None) -> None:
    """Writes a safetensors file (8-byte header length, JSON header, 8-byte aligned data)."""
    header: dict[str, Any] = {}
    if metadata:
        header["__metadata__"] = metadata
    offset = 0
    blobs = []
    for name, array in tensors.items():
        array = np.ascontiguousarray(array)
        data = array.tobytes()
        header[name] = {
            "dtype": SAFETENSORS_DTYPES[str(array.dtype)],
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def tensor_entry(name: str, shape: tuple[int, ...], dtype: str, batch_axis: int | None) -> dict[str, Any]:
    """Manifest tensor spec: column-major letter string (reverse of the row-major axes)."""
    letters = []
    dims: dict[str, int] = {}
    pool = iter(AXIS_LETTERS)
    for axis, size in enumerate(shape):
        if axis == batch_axis:
            letters.append("n")
        else:
            letter = next(pool)
            letters.append(letter)
            dims[letter] = int(size)
    entry: dict[str, Any] = {"name": name, "dtype": MANIFEST_DTYPES[dtype], "shape": "".join(reversed(letters))}
    if dims:
        entry["dims"] = dims
    return entry


def yaml_scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(str(value))


def to_yaml(value: Any, indent: int = 0) -> str:
    """A small YAML writer for the manifest (mappings, lists, scalars); keeps key order."""
    pad = "  " * indent
    out = []
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, (dict, list)) and item:
                out.append(f"{pad}{key}:")
                out.append(to_yaml(item, indent + 1))
            elif isinstance(item, list):
                out.append(f"{pad}{key}: []")
            else:
                out.append(f"{pad}{key}: {yaml_scalar(item)}")
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict):
                lines = to_yaml(item, indent + 1).split("\n")
                first = lines[0].strip()
                out.append(f"{pad}- {first}")
                out.extend(lines[1:])
            else:
                out.append(f"{pad}- {yaml_scalar(item)}")
    return "\n".join(out)


def flatten_params(params: Any) -> tuple[list[str], list[np.ndarray], Any]:
    leaves_with_path, treedef = jax.tree_util.tree_flatten_with_path(params)
    names = []
    arrays = []
    for path, leaf in leaves_with_path:
        parts = []
        for key in path:
            if hasattr(key, "key"):
                parts.append(str(key.key))
            elif hasattr(key, "idx"):
                parts.append(str(key.idx))
            else:
                parts.append(str(key))
        names.append(".".join(parts))
        arrays.append(np.asarray(leaf))
    return names, arrays, treedef


def random_input(rng: np.random.Generator, shape: tuple[int, ...], dtype: str, int_high: int) -> np.ndarray:
    if dtype.startswith("float") or dtype == "bfloat16":
        return rng.standard_normal(shape).astype(np.float32).astype(jnp.dtype(dtype))
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(np.bool_)
    return rng.integers(0, int_high, shape).astype(dtype)


def numpy_dtype_name(dtype: str) -> str:
    """numpy's name for a dtype given as a manifest token ("f32") or a numpy name ("float32")."""
    by_token = {token: name for name, token in MANIFEST_DTYPES.items()}
    if dtype in by_token:
        return by_token[dtype]
    if dtype in MANIFEST_DTYPES:
        return dtype
    raise ValueError(
        f"unknown input dtype {dtype!r}: use a manifest token ({', '.join(by_token)}) "
        f"or a numpy name ({', '.join(MANIFEST_DTYPES)})"
    )


def export_bundle(
    apply: Callable[..., Any],
    params: Any,
    inputs: dict[str, tuple[tuple[int, ...], str]],
    out_dir: str,
    batch_sizes: list[int],
    output_names: list[str] | None = None,
    portable: bool = False,
    description: str = "",
    int_input_high: int = 100,
    seed: int = 0,
    jax_exported: bool = False,
    name: str | None = None,
) -> None:
    # The model name must equal the bundle directory's name when served; `name` lets a caller
    # export into a staging directory and rename it into place.
    name = name or os.path.basename(os.path.normpath(out_dir))
    os.makedirs(out_dir, exist_ok=True)
    weight_names, weight_arrays, treedef = flatten_params(params)
    inputs = {k: (tuple(shape), numpy_dtype_name(dtype)) for k, (shape, dtype) in inputs.items()}
    input_names = list(inputs)
    n_inputs = len(input_names)

    def flat_fn(*args: Any) -> tuple[Any, ...]:
        restored = jax.tree_util.tree_unflatten(treedef, list(args[n_inputs:]))
        result = apply(restored, *args[:n_inputs])
        return result if isinstance(result, tuple) else (result,)

    # keep_unused: the argument order is a contract, so XLA may not drop an unused weight.
    jitted = jax.jit(flat_fn, keep_unused=True)
    weight_specs = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in weight_arrays]
    rng = np.random.default_rng(seed)
    reference: dict[str, np.ndarray] = {}
    output_shapes: dict[int, list[jax.ShapeDtypeStruct]] = {}
    cpu = jax.devices("cpu")[0]
    gpus = [d for d in jax.devices() if d.platform != "cpu"]

    for n in batch_sizes:
        specs = [jax.ShapeDtypeStruct((n, *shape), jnp.dtype(dtype)) for shape, dtype in inputs.values()]
        # Lowered for the CPU: the ops these models use lower the same for every platform, and a
        # multi-platform export would add a platform-index parameter that breaks the argument order.
        exported = jax.export.export(jitted, platforms=["cpu"])(*specs, *weight_specs)
        if portable:
            module_bytes = exported.mlir_module_serialized
        else:
            module_bytes = exported.mlir_module().encode()
        file_name = "model.mlir" if len(batch_sizes) == 1 else f"model.b{n}.mlir"
        with open(os.path.join(out_dir, file_name), "wb") as f:
            f.write(module_bytes)
        output_shapes[n] = list(exported.out_avals)
        if jax_exported:
            # JAX's own serialization of the same module: benchmarks reload it with
            # jax.export.deserialize to run exactly this program as the JAX anchor.
            for platform in ["cpu", *(["cuda"] if gpus else [])]:
                per_platform = jax.export.export(jitted, platforms=[platform])(*specs, *weight_specs)
                with open(os.path.join(out_dir, f"jax_exported.{platform}.b{n}.bin"), "wb") as f:
                    f.write(per_platform.serialize())

        args = [random_input(rng, (n, *shape), dtype, int_input_high) for shape, dtype in inputs.values()]
        for input_name, arg in zip(input_names, args):
            reference[f"b{n}/inputs/{input_name}"] = arg
        cpu_out = jitted(*[jax.device_put(a, cpu) for a in [*args, *weight_arrays]])
        out_names = output_names or [f"output_{i}" for i in range(len(cpu_out))]
        for out_name, value in zip(out_names, cpu_out):
            reference[f"b{n}/outputs/{out_name}"] = np.asarray(value)
        if gpus:
            gpu_out = jitted(*[jax.device_put(a, gpus[0]) for a in [*args, *weight_arrays]])
            for out_name, value in zip(out_names, gpu_out):
                reference[f"b{n}/outputs_gpu/{out_name}"] = np.asarray(value)

    out_names = output_names or [f"output_{i}" for i in range(len(output_shapes[batch_sizes[0]]))]
    # An output axis is the batch axis when its size follows the batch size across all sizes.
    executable_outputs = []
    for i, out_name in enumerate(out_names):
        avals = [output_shapes[n][i] for n in batch_sizes]
        shape = avals[0].shape
        batch_axis = 0 if shape and all(a.shape[0] == n for a, n in zip(avals, batch_sizes)) else None
        executable_outputs.append(tensor_entry(out_name, shape, str(avals[0].dtype), batch_axis))

    executable_inputs = [tensor_entry(k, (1, *shape), dtype, 0) for k, (shape, dtype) in inputs.items()]
    write_safetensors(
        os.path.join(out_dir, "weights.safetensors"),
        dict(zip(weight_names, weight_arrays)),
        {"argument_order": json.dumps(weight_names), "format": "pt"},
    )
    write_safetensors(os.path.join(out_dir, "reference.safetensors"), reference,
                      {"batch_sizes": json.dumps(batch_sizes), "outputs": json.dumps(out_names)})

    manifest = {
        "format_version": "2.0",
        "name": name,
        "description": description,
        "executable_inputs": executable_inputs,
        "executable_outputs": executable_outputs,
        "batching": {"compiled_batch_sizes": batch_sizes},
        "provenance": {
            "exporter": "xlaserve tools/export_jax_bundle.py",
            "jax_version": jax.__version__,
            "exported_on": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "exported_with_device": (gpus[0].device_kind if gpus else "cpu"),
            "module_format": "portable" if portable else "text",
            "weights_sha256": hashlib.sha256(open(os.path.join(out_dir, "weights.safetensors"), "rb").read()).hexdigest(),
        },
    }
    with open(os.path.join(out_dir, "manifest.yaml"), "w") as f:
        f.write(to_yaml(manifest) + "\n")
    print(f"exported {name}: {len(weight_names)} weights, batch sizes {batch_sizes}, "
          f"{'portable artifact' if portable else 'text'} modules -> {out_dir}", file=sys.stderr)


def main() -> None:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from models import EXAMPLES

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("example", choices=sorted(EXAMPLES))
    parser.add_argument("out_dir")
    parser.add_argument("--portable", action="store_true", help="write MLIR portable artifacts (VHLO bytecode)")
    parser.add_argument("--batch-sizes", default=None, help="comma-separated, e.g. 1,32")
    parser.add_argument("--name", default=None, help="model name (default: the output directory's name)")
    parser.add_argument("--jax-exported", action="store_true",
                        help="also write jax_exported.<platform>.b{N}.bin (jax.export serialization) for benchmark anchors")
    args = parser.parse_args()
    build = EXAMPLES[args.example]
    spec = build()
    if args.batch_sizes:
        spec["batch_sizes"] = [int(x) for x in args.batch_sizes.split(",")]
    export_bundle(out_dir=args.out_dir, portable=args.portable, jax_exported=args.jax_exported,
                  name=args.name, **spec)


if __name__ == "__main__":
    main()
