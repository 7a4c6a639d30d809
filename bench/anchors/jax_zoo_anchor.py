#!/usr/bin/env python3
"""XLA CPU as a line-driven anchor for bench/cpu/zoo.bench.ts: the parent and this process take
turns, a block of runs each, so both sides see the same machine speed (other work on the cores,
frequency) at the same time.

Commands on stdin, one JSON line answered on stdout for each:
  load <bundle dir> <batch>   deserialize jax_exported.cpu.b<batch>.bin, put the stored inputs and
                              the weights on the CPU device, compile and run it once
  time <bundle dir> <batch> <runs>   ms of each of <runs> executions (after the load's warm-up)
  quit

The program is JAX's own serialization of the bundle's module (written by
tools/export_jax_bundle.py --jax-exported), so both sides run the same StableHLO.
"""

import json
import os
import sys
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import numpy as np  # noqa: E402
from safetensors.numpy import load_file, safe_open  # noqa: E402

LOADED = {}


def load(bundle: str, batch: int) -> dict:
    with open(os.path.join(bundle, f"jax_exported.cpu.b{batch}.bin"), "rb") as f:
        exported = jax.export.deserialize(bytearray(f.read()))
    with safe_open(os.path.join(bundle, "weights.safetensors"), "np") as f:
        order = json.loads(f.metadata()["argument_order"])
    weights = load_file(os.path.join(bundle, "weights.safetensors"))
    reference = load_file(os.path.join(bundle, "reference.safetensors"))
    n_inputs = len(exported.in_avals) - len(order)
    inputs = [v for k, v in reference.items() if k.startswith(f"b{batch}/inputs/")]
    if len(inputs) != n_inputs:
        inputs = [np.zeros(a.shape, a.dtype) for a in exported.in_avals[:n_inputs]]
    device = jax.devices("cpu")[0]
    args = [jax.device_put(a, device) for a in [*inputs, *[weights[n] for n in order]]]
    call = jax.jit(exported.call)
    t0 = time.perf_counter()
    jax.block_until_ready(call(*args))
    first_ms = (time.perf_counter() - t0) * 1e3
    for _ in range(3):
        jax.block_until_ready(call(*args))
    LOADED[(bundle, batch)] = (call, args)
    return {"ok": True, "first_ms": first_ms, "jax": jax.__version__, "device": device.device_kind,
            "cpu_count": os.cpu_count(), "affinity": len(os.sched_getaffinity(0))}


def timed(bundle: str, batch: int, runs: int) -> dict:
    call, args = LOADED[(bundle, batch)]
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        jax.block_until_ready(call(*args))
        times.append((time.perf_counter() - t0) * 1e3)
    return {"ok": True, "times_ms": times}


def main() -> None:
    print(json.dumps({"ready": True, "jax": jax.__version__}), flush=True)
    for line in sys.stdin:
        parts = line.split()
        if not parts:
            continue
        try:
            if parts[0] == "quit":
                return
            if parts[0] == "load":
                answer = load(parts[1], int(parts[2]))
            elif parts[0] == "time":
                answer = timed(parts[1], int(parts[2]), int(parts[3]))
            else:
                answer = {"ok": False, "error": f"unknown command {parts[0]!r}"}
        except Exception as e:  # one model's failure must not end the run
            answer = {"ok": False, "error": f"{type(e).__name__}: {e}"}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
