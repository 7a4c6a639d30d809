#!/usr/bin/env python3
"""The JAX anchor for xlaserve's benchmarks: runs a bundle's program through JAX (XLA) on the
same machine so every xlaserve figure can be printed as a ratio against it.

The program is the bundle's own module as JAX serialized it at export time
(jax_exported.<platform>.b{N}.bin, written by `tools/export_jax_bundle.py --jax-exported`), so
both sides run the same StableHLO. Weights come from weights.safetensors in argument order and
inputs from reference.safetensors.

  python3 bench/anchors/jax_anchor.py latency <bundle> --batch 1 --platform cuda --runs 50
  python3 bench/anchors/jax_anchor.py first-result <bundle> --batch 1 --platform cuda --cache-dir D

Prints one JSON object on stdout.
"""

import argparse
import json
import os
import statistics
import sys
import time

START = time.perf_counter()
PHASES = {}


def mark(name: str) -> None:
    """The end of a start-up step, in ms since the interpreter reached this module."""
    PHASES[name] = round((time.perf_counter() - START) * 1e3, 3)


def load_args(bundle: str, batch: int):
    import numpy as np
    from safetensors.numpy import load_file, safe_open

    with safe_open(os.path.join(bundle, "weights.safetensors"), "np") as f:
        order = json.loads(f.metadata()["argument_order"])
    weights = load_file(os.path.join(bundle, "weights.safetensors"))
    reference = load_file(os.path.join(bundle, "reference.safetensors"))
    prefix = f"b{batch}/inputs/"
    inputs = [v for k, v in reference.items() if k.startswith(prefix)]
    if not inputs:
        # Benchmarks may use batch sizes without stored references: zeros of the exported shape.
        inputs = None
    return inputs, [weights[name] for name in order], np


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["latency", "first-result"])
    parser.add_argument("bundle")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--platform", default="cuda")
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--cache-dir", default=None, help="JAX persistent compilation cache (first-result mode)")
    args = parser.parse_args()

    if args.platform == "cpu":
        os.environ["JAX_PLATFORMS"] = "cpu"
    import jax

    mark("imported")
    if args.cache_dir:
        jax.config.update("jax_compilation_cache_dir", args.cache_dir)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    with open(os.path.join(args.bundle, f"jax_exported.{args.platform}.b{args.batch}.bin"), "rb") as f:
        exported = jax.export.deserialize(bytearray(f.read()))
    inputs, weights, np = load_args(args.bundle, args.batch)
    if inputs is None:
        n_inputs = len(exported.in_avals) - len(weights)
        inputs = [np.zeros(a.shape, a.dtype) for a in exported.in_avals[:n_inputs]]
    mark("bundleRead")
    device = jax.devices(args.platform)[0]
    mark("client")
    dev_args = [jax.device_put(a, device) for a in [*inputs, *weights]]
    mark("argsPut")
    call = jax.jit(exported.call)

    if args.mode == "first-result":
        out = call(*dev_args)
        jax.block_until_ready(out)
        np.asarray(out[0] if isinstance(out, (tuple, list)) else out)
        mark("downloaded")
        print(json.dumps({"mode": "first-result", "in_process_ms": (time.perf_counter() - START) * 1e3, "phases": PHASES}))
        return

    for _ in range(5):
        jax.block_until_ready(call(*dev_args))
    times = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        jax.block_until_ready(call(*dev_args))
        times.append((time.perf_counter() - t0) * 1e3)
    print(json.dumps({
        "mode": "latency", "platform": args.platform, "batch": args.batch, "runs": args.runs,
        "median_ms": statistics.median(times), "p10_ms": sorted(times)[len(times) // 10],
        "p90_ms": sorted(times)[(len(times) * 9) // 10], "jax": jax.__version__,
        "device": device.device_kind,
    }))


if __name__ == "__main__":
    sys.exit(main())
