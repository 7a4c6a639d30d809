#!/bin/bash
# Issue 7 GPU figures on the device machine: export ResNet-50 with JAX there, then the worker-level
# probe bench on the PJRT engine. Build the bundle first (here):
#   bun build bench/memory-probe.bench.ts --target bun --outfile tmp/gpu/memory-probe.js
# then run `bash bench/memory-probe-gpu.sh` on the device with carry [".device", "tmp/gpu"];
# $OUT/memory-probe-gpu.json is bench/results/memory-probe-gpu.json.
set -u
xz -dc .device/bun.xz > /tmp/bun && chmod +x /tmp/bun
/tmp/bun --version
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
PLUGIN=$(python3 -c "import jax_plugins.xla_cuda13 as p, os; print(os.path.join(os.path.dirname(p.__file__), 'xla_cuda_plugin.so'))")
echo "plugin: $PLUGIN"
timeout 300 python3 tools/export_jax_bundle.py resnet50 /tmp/resnet50 --batch-sizes 1,8 > "$OUT/export.log" 2>&1 || { echo "export failed"; tail -20 "$OUT/export.log"; }
ls -la /tmp/resnet50 || true
timeout 360 /tmp/bun tmp/gpu/memory-probe.js --engine pjrt --plugin "$PLUGIN" --repository "$PWD/examples/models" --add /tmp/resnet50 --out "$OUT/memory-probe-gpu.json" > "$OUT/run.log" 2>&1
echo "bench rc=$?"
tail -c 6000 "$OUT/run.log"
