#!/usr/bin/env python3
"""Rebuilds the model zoo (tools/zoo/) into tests/zoo/models/<name>/: each model exported by
export_jax_bundle.py at its two batch sizes, with XLA CPU's outputs in reference.safetensors and
JAX's own serialization of each program (jax_exported.cpu.b{N}.bin) for the XLA CPU anchor of
bench/cpu/zoo.bench.ts.

  python3 tools/build_zoo.py [--out tests/zoo/models] [name ...]

Needs jax==0.10.2 and jaxlib==0.10.2 (the committed bundles were made with them).
"""

import argparse
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from export_jax_bundle import export_bundle  # noqa: E402
from zoo import ZOO  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help=f"models to rebuild (default all: {', '.join(ZOO)})")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(HERE), "tests", "zoo", "models"))
    args = parser.parse_args()
    unknown = [n for n in args.names if n not in ZOO]
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}; the zoo has {', '.join(ZOO)}")
    for name in args.names or list(ZOO):
        spec = ZOO[name]()
        final = os.path.join(args.out, name)
        staging = final + ".tmp"
        shutil.rmtree(staging, ignore_errors=True)
        export_bundle(out_dir=staging, name=name, jax_exported=True, **spec)
        shutil.rmtree(final, ignore_errors=True)
        os.rename(staging, final)


if __name__ == "__main__":
    main()
