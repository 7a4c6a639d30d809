#!/usr/bin/env bash
# The GPU host's benchmark driver: set-up, exports, every benchmark with a time limit, results
# collected into one folder and packed into $OUT. One failing step never aborts the run: its
# exit status, time and log tail go into steps.jsonl and the summary.
#
#   bash bench/gpu/run-all.sh [phase ...]
#
# Phases (default: all):
#   setup          bun from .device/bun.xz, node_modules from tmp/bench-deps.tar.xz, OpenBLAS from
#                  .device/debs, the PJRT plugin path: written to $BENCH_WORK/env.sh
#   export         examples (mlp, cnn, transformer) and ResNet-50 (b1, b32) with --jax-exported
#                  into $BENCH_WORK/models (skipped per bundle when already there)
#   compile-load   bench/gpu/pjrt-compile-load.bench.ts          (issue 3)
#   restart        bench/gpu/pjrt-restart.bench.ts: fresh-process load and latency on one
#                  serialized program vs JAX running the same bytes (issue 3; after compile-load)
#   restart-pinned bench/gpu/diag/cpu-speeds.ts (each CPU's speed), then the restart benchmark twice,
#                  the whole of it (JAX too) pinned with taskset to the 4 fastest, then the 4 slowest
#                  CPUs: on this virtual machine some vCPUs run the same work far slower than others
#   first-result   bench/gpu/first-result.bench.ts               (issue 3)
#   worker-start   bench/gpu/worker-start.bench.ts               (issue 5); warm starts take turns
#                  over pjrt.loadThreads 0 and 4 (or the flags in $WORKER_START_SETTINGS, e.g.
#                  "--hedge-loads 0,3")
#   reload-stall   bench/gpu/reload-stall.bench.ts: MLP latency while ResNet-50 recompiles on a hot
#                  reload (after worker-start: its warm repository)
#   fleet-join     bench/fleet-join.bench.ts: ready time of a worker joining a warm fleet cache (a
#                  SQLite catalog in a shared state directory, a shared blob directory: the host has no
#                  PostgreSQL) vs a warm local cache vs a cold start, through PJRT
#   memory         bench/gpu/memory-probe.bench.ts               (issue 7)
#   memory-worker  bench/memory-probe.bench.ts (the worker owner's in-process probe; issue 7),
#                  where that file exists
#   cpu            bench/cpu/engine-vs-xla.bench.ts on cores 0,1 (issue 4)
#   zoo            bench/cpu/zoo.bench.ts: every zoo model (tests/zoo/models, committed) at both batch
#                  sizes, CPU engine vs XLA CPU (this host's jax with JAX_PLATFORMS=cpu), taking turns,
#                  on all cores (taskset -c 0-N) and then on cores 0,1
#   gpu-tests      bun test tests/gpu packages/backend-pjrt/test, figures to gpu-tests-<date>.json
#   load-diag      bench/gpu/diag/load-breakdown.ts for ResNet-50 b1 and b32 (what source locations
#                  cost a load), one load under XLA's VLOG (logs/load-trace-b1.log), and the host's
#                  CPU topology (logs/topology.log)
#   load-alloc     after compile-load, on its serialized ResNet-50 b1: bench/gpu/diag/parallel-loads.ts
#                  (loads on 1, 2, 4, 8 threads at once) and bench/gpu/diag/allocators.ts (loads in
#                  fresh processes under glibc malloc, jemalloc, tcmalloc and mimalloc from .device/debs)
#   load-faults    after compile-load: bench/gpu/diag/first-load-faults.ts, 3 rounds of fresh processes
#                  per variant: a first load's page faults, which mappings they filled, and prefaults
#   hedged-loads   bench/gpu/diag/hedged-loads.ts on ResNet-50 b1 and b32: fresh processes taking
#                  turns over pjrt.hedgeLoads 0, 1 and 3 (first load, later loads, a burst);
#                  $HEDGED_SETTINGS (loadThreads:hedgeLoads list) and $HEDGED_ROUNDS change them
#   thread-loads   bench/gpu/diag/thread-vs-main-loads.ts for ResNet-50 b1 and b32: loads on a loader
#                  thread against loads on the client's thread, in turns, in one process
#   http           bench/http.bench.ts on this host's cores, CPU engine and PJRT (wrk from .device/debs)
#   grpc           bench/grpc.bench.ts: gRPC ModelInfer on the MLP vs REST and vs a bare grpc-js
#                  server, and a 64 MiB input inline vs through shared memory; CPU engine and PJRT
#   scheduler      bench/offered-load.bench.ts: offered-load curves with coalescing off and on (the
#                  two workers taking turns at saturation), the engine's ceiling for coalescing and
#                  the load generator's capacity, and the light model's p99 under a 10x flood (fifo,
#                  fair): PJRT with the MLP and ResNet-50 (skipped, saying so, without a PJRT plugin),
#                  then the CPU engine with the examples on this host's cores
#   fairness       the scheduler phase's fairness flood alone (PJRT, MLP under a 10x ResNet-50 flood),
#                  with the device's default executions in flight and with one (scheduler.maxInFlight)
#   http-vs-reuseport  bench/http-vs-reuseport.bench.ts: one worker process (the anchor) against
#                  `xlaserve node --workers N` (N processes on one port, SO_REUSEPORT), the same MLP
#                  and load generator, N = 2, 4, 8 (up to the cores)
#   part1 = setup export compile-load restart first-result cpu
#   part2 = setup export worker-start memory memory-worker
#   all   = setup export compile-load restart first-result worker-start memory memory-worker cpu
# setup and export always run first when a later phase needs them and they have not run.
#
# Environment: BENCH_WORK (default <repo>/tmp/bench-gpu; ignored by git, kept between warm
# device calls), BENCH_DEADLINE_S (default 560: no step starts, and running ones are cut, past
# it, so the results are always packed), OUT (default $BENCH_WORK/out).
set -u
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$REPO"
START=$(date +%s)
DEADLINE_S=${BENCH_DEADLINE_S:-560}
WORK=${BENCH_WORK:-$REPO/tmp/bench-gpu}
OUT=${OUT:-$WORK/out}
STAMP=$(date -u +%Y-%m-%dT%H-%M-%SZ)
RES=$WORK/results/$STAMP
LOGS=$RES/logs
STEPS=$RES/steps.jsonl
export XLASERVE_BENCH_RESULTS=$RES
export PYTHONUNBUFFERED=1

phases=("$@")
[ ${#phases[@]} -eq 0 ] && phases=(all)
expanded=()
for p in "${phases[@]}"; do
  case "$p" in
    all) expanded+=(setup export compile-load restart first-result worker-start memory memory-worker cpu) ;;
    part1) expanded+=(setup export compile-load restart first-result cpu) ;;
    part2) expanded+=(setup export worker-start memory memory-worker) ;;
    setup|export|gpu-tests|load-diag|compile-load|load-alloc|load-faults|hedged-loads|thread-loads|restart|restart-pinned|first-result|worker-start|fleet-join|reload-stall|memory|memory-worker|cpu|zoo|portable|http|grpc|scheduler|fairness|http-vs-reuseport) expanded+=("$p") ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | grep '^#'; exit 0 ;;
    *) echo "unknown phase: $p (setup export gpu-tests load-diag compile-load load-alloc load-faults hedged-loads thread-loads restart restart-pinned first-result worker-start fleet-join reload-stall memory memory-worker cpu zoo portable http grpc scheduler fairness http-vs-reuseport part1 part2 all)" >&2; exit 2 ;;
  esac
done
# setup (and export, for anything that reads bundles) first, once each.
want() { local x; for x in "${expanded[@]}"; do [ "$x" = "$1" ] && return 0; done; return 1; }
ordered=()
if [ ${#expanded[@]} -gt 0 ]; then
  ordered+=(setup)
  want gpu-tests && ordered+=(gpu-tests)
  for x in load-diag compile-load load-alloc load-faults hedged-loads thread-loads restart restart-pinned first-result worker-start fleet-join reload-stall memory memory-worker cpu scheduler fairness; do want $x && need_export=1; done
  { want export || [ -n "${need_export:-}" ]; } && ordered+=(export)
  for x in load-diag compile-load load-alloc load-faults hedged-loads thread-loads restart restart-pinned first-result worker-start fleet-join reload-stall memory memory-worker cpu zoo portable http grpc scheduler fairness http-vs-reuseport; do want $x && ordered+=($x); done
fi
mkdir -p "$WORK" "$OUT" "$RES" "$LOGS"
echo "run-all: phases ${ordered[*]}; work $WORK; results $RES; deadline ${DEADLINE_S}s"

elapsed() { echo $(( $(date +%s) - START )); }
json_str() { python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))' 2>/dev/null || echo '""'; }

# run_step NAME LIMIT_S CMD...: runs with a time limit inside the deadline, logs to $LOGS/NAME.log,
# appends {step, rc, seconds, timedOut, skipped, tail} to steps.jsonl. Never exits the script.
run_step() {
  local name=$1 limit=$2; shift 2
  local left=$(( DEADLINE_S - $(elapsed) - 15 ))
  if [ "$left" -lt 20 ]; then
    echo "== $name: SKIPPED (deadline: $(elapsed)s of ${DEADLINE_S}s used)"
    echo "{\"step\":\"$name\",\"skipped\":true,\"reason\":\"deadline\"}" >>"$STEPS"
    return 0
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  echo "== $name (limit ${limit}s, at $(elapsed)s)"
  local t0=$(date +%s)
  timeout -k 10 "$limit" "$@" >"$LOGS/$name.log" 2>&1
  local rc=$?
  local secs=$(( $(date +%s) - t0 ))
  local timed=false; [ $rc -eq 124 ] || [ $rc -eq 137 ] && timed=true
  # The lines that matter on the console: ratios, errors, notes, result files.
  grep -E 'ratio |ERROR|note:|wrote |exported |error:|Error' "$LOGS/$name.log" | cut -c1-300 | head -40
  echo "   -> rc $rc in ${secs}s$([ $timed = true ] && echo ' (TIMED OUT)')"
  local tail; tail=$(tail -c 1500 "$LOGS/$name.log" | json_str)
  echo "{\"step\":\"$name\",\"rc\":$rc,\"seconds\":$secs,\"timedOut\":$timed,\"limit\":$limit,\"tail\":$tail}" >>"$STEPS"
  return 0
}

# save_json_line STEP FILE: a diagnostic's result (the last JSON line of STEP's log) as FILE.
save_json_line() {
  local line; line=$(grep '^{' "$LOGS/$1.log" 2>/dev/null | tail -1)
  [ -n "$line" ] && echo "$line" >"$2"
  return 0
}

# ---- setup ----------------------------------------------------------------------------------------
do_setup() {
  local env=$WORK/env.sh
  : >"$env.new"
  # Bun: the repository's node_modules/.bin/bun where it runs, else .device/bun.xz.
  local bun=""
  if [ -x "$REPO/node_modules/.bin/bun" ] && "$REPO/node_modules/.bin/bun" --version >/dev/null 2>&1; then
    bun=$REPO/node_modules/.bin/bun
  elif command -v bun >/dev/null 2>&1; then
    bun=$(command -v bun)
  elif [ -f "$REPO/.device/bun.xz" ]; then
    mkdir -p "$WORK/bin"
    [ -x "$WORK/bin/bun" ] || { xz -dc "$REPO/.device/bun.xz" >"$WORK/bin/bun.tmp" && chmod +x "$WORK/bin/bun.tmp" && mv "$WORK/bin/bun.tmp" "$WORK/bin/bun"; }
    bun=$WORK/bin/bun
  fi
  [ -n "$bun" ] || { echo "setup: no bun (carry .device)"; return 1; }
  echo "export PATH=$(dirname "$bun"):\$PATH" >>"$env.new"
  # node_modules: what the benchmarks import (tmp/bench-deps.tar.xz from bench/gpu/pack-deps.ts).
  if [ ! -f "$REPO/node_modules/@sinclair/typebox/package.json" ] || [ ! -f "$REPO/node_modules/elysia/package.json" ]; then
    if [ -f "$REPO/tmp/bench-deps.tar.xz" ]; then
      tar -xJf "$REPO/tmp/bench-deps.tar.xz" -C "$REPO" || echo "setup: unpacking tmp/bench-deps.tar.xz failed"
    else
      echo "setup: node_modules lacks runtime packages and tmp/bench-deps.tar.xz is missing (run: bun bench/gpu/pack-deps.ts; carry it)"
    fi
  fi
  mkdir -p "$REPO/node_modules/@xlaserve"
  for p in core backend-pjrt backend-reactant cache server; do
    [ -e "$REPO/node_modules/@xlaserve/$p" ] || ln -sfn "../../packages/$p" "$REPO/node_modules/@xlaserve/$p"
  done
  [ -e "$REPO/node_modules/@xlaserve/worker" ] || ln -sfn ../../apps/worker "$REPO/node_modules/@xlaserve/worker"
  # OpenBLAS from Debian's .debs (no root install: dpkg -x into a folder).
  if ls "$REPO"/.device/debs/*.deb >/dev/null 2>&1; then
    mkdir -p "$WORK/blas"
    for d in "$REPO"/.device/debs/*.deb; do dpkg -x "$d" "$WORK/blas"; done
    local so; so=$(find "$WORK/blas" -name 'libopenblas.so.0' | head -1)
    local gf; gf=$(find "$WORK/blas" -name 'libgfortran.so.5*' | head -1)
    if [ -n "$so" ]; then
      echo "export XLASERVE_BLAS_LIBRARY=$so" >>"$env.new"
      echo "export LD_LIBRARY_PATH=$(dirname "$so")${gf:+:$(dirname "$gf")}\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" >>"$env.new"
    fi
    # wrk (and its LuaJIT, in the same library folder as libgfortran) for the HTTP benchmark.
    [ -x "$WORK/blas/usr/bin/wrk" ] && echo "export PATH=$WORK/blas/usr/bin:\$PATH" >>"$env.new"
  else
    echo "setup: no .device/debs: the CPU engine will look for a system OpenBLAS"
  fi
  # The PJRT CUDA plugin of the jax-cuda13-pjrt package.
  local plugdir; plugdir=$(python3 -c 'import jax_plugins.xla_cuda13 as p, os; print(os.path.dirname(p.__file__))' 2>/dev/null)
  if [ -n "$plugdir" ] && [ -f "$plugdir/xla_cuda_plugin.so" ]; then
    echo "export XLASERVE_PJRT_PLUGIN=$plugdir/xla_cuda_plugin.so" >>"$env.new"
  else
    echo "setup: jax_plugins.xla_cuda13 not importable: no PJRT plugin"
  fi
  mv "$env.new" "$env"
  # shellcheck disable=SC1090
  . "$env"
  echo "bun $(bun --version 2>&1)"; cat "$env"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv 2>&1 | head -3
  python3 -c 'import jax, jaxlib, numpy; print("jax", jax.__version__, "jaxlib", jaxlib.__version__, "numpy", numpy.__version__, jax.devices())' 2>&1 | tail -1
  bun -e 'await import("@xlaserve/core"); await import("@xlaserve/backend-pjrt"); console.log("imports ok")' 2>&1 | tail -2
}

# ---- export ---------------------------------------------------------------------------------------
exported() { [ -f "$WORK/models/$1/manifest.yaml" ] && ls "$WORK/models/$1"/jax_exported.cuda.b*.bin >/dev/null 2>&1; }
do_export() {
  mkdir -p "$WORK/models"
  local pids=() names=()
  for m in mlp cnn transformer resnet50; do
    if exported "$m"; then echo "export $m: already there"; continue; fi
    rm -rf "$WORK/models/$m"
    local extra=(); [ "$m" = resnet50 ] && extra=(--batch-sizes 1,32)
    ( XLA_PYTHON_CLIENT_PREALLOCATE=false python3 tools/export_jax_bundle.py "$m" "$WORK/models/$m.tmp" --name "$m" --jax-exported "${extra[@]}" >"$LOGS/export-$m.log" 2>&1 \
        && rm -rf "$WORK/models/$m" && mv "$WORK/models/$m.tmp" "$WORK/models/$m" ) &
    pids+=($!); names+=("$m")
  done
  local i rc=0
  for i in "${!pids[@]}"; do
    if wait "${pids[$i]}"; then echo "export ${names[$i]}: ok"; else echo "export ${names[$i]}: FAILED"; tail -5 "$LOGS/export-${names[$i]}.log"; rc=1; fi
  done
  # Bundle directories must be named like the model; .tmp leftovers are not bundles (no rename).
  rm -rf "$WORK"/models/*.tmp
  ls -la "$WORK/models" "$WORK/models/resnet50" 2>&1 | head -30
  return $rc
}

for phase in "${ordered[@]}"; do
  case "$phase" in
    setup)
      run_step setup 180 bash -c "$(declare -f do_setup); REPO='$REPO' WORK='$WORK' do_setup"
      # shellcheck disable=SC1091
      [ -f "$WORK/env.sh" ] && . "$WORK/env.sh"
      ;;
    export)
      run_step export 300 bash -c "$(declare -f exported do_export); REPO='$REPO' WORK='$WORK' LOGS='$LOGS' do_export"
      ;;
    load-diag)
      { lscpu; echo; nvidia-smi topo -m; echo; echo "SMT siblings:"; sort -u /sys/devices/system/cpu/cpu*/topology/thread_siblings_list | tr '\n' ' '; echo; } >"$LOGS/topology.log" 2>&1
      for b in 1 32; do
        run_step load-diag-b$b 150 env SAVE_DIR="$WORK/diag" bun bench/gpu/diag/load-breakdown.ts "${XLASERVE_PJRT_PLUGIN:-}" \
          "$WORK/models/resnet50" $b 15
        save_json_line load-diag-b$b "$RES/load-breakdown-b$b-$STAMP.json"
      done
      if [ -f "$WORK/diag/exported/resnet50.b1.pjrt" ]; then
        TF_CPP_MIN_LOG_LEVEL=0 TF_CPP_MAX_VLOG_LEVEL=2 timeout 90 bun bench/gpu/diag/load-variants.ts "${XLASERVE_PJRT_PLUGIN:-}" \
          "$WORK/models/resnet50" 1 trace "$WORK/diag/exported/resnet50.b1.pjrt" >"$LOGS/load-trace-b1.log" 2>&1
        echo "load-diag: trace $(wc -l <"$LOGS/load-trace-b1.log") lines"
      fi
      ;;
    compile-load)
      run_step compile-load 300 bun bench/gpu/pjrt-compile-load.bench.ts --models "$WORK/models" \
        --save-serialized "$WORK/serialized" --loads 7 --runs 100 --latency-models resnet50
      ;;
    load-alloc)
      prog="$WORK/serialized/resnet50.b1.pjrt"
      [ -f "$prog" ] || { echo "load-alloc: no $prog (run compile-load first)"; continue; }
      run_step parallel-loads 120 bun bench/gpu/diag/parallel-loads.ts "${XLASERVE_PJRT_PLUGIN:-}" \
        "$WORK/models/resnet50" 1 "$prog" 1,2,4,8 4
      save_json_line parallel-loads "$RES/parallel-loads-$STAMP.json"
      libs=()
      for pair in jemalloc=libjemalloc.so.2 tcmalloc=libtcmalloc_minimal.so.4 mimalloc=libmimalloc.so.2; do
        so=$(find "$WORK/blas" -name "${pair#*=}" 2>/dev/null | head -1)
        [ -n "$so" ] && libs+=("${pair%%=*}=$so")
      done
      run_step allocators 200 bun bench/gpu/diag/allocators.ts "${XLASERVE_PJRT_PLUGIN:-}" \
        "$WORK/models/resnet50" "$prog" 6 glibc=glibc "${libs[@]}"
      save_json_line allocators "$RES/allocators-$STAMP.json"
      ;;
    load-faults)
      prog="$WORK/serialized/resnet50.b1.pjrt"
      [ -f "$prog" ] || { echo "load-faults: no $prog (run compile-load first)"; continue; }
      for i in 1 2 3; do
        for v in none plugin-code all-code heap code+heap thread thread+prefault; do
          run_step "load-faults-$i-$v" 60 bun bench/gpu/diag/first-load-faults.ts "${XLASERVE_PJRT_PLUGIN:-}" "$prog" "$v"
          grep '^{"variant"' "$LOGS/load-faults-$i-$v.log" >>"$RES/load-faults-$STAMP.jsonl"
        done
      done
      ;;
    hedged-loads)
      run_step hedged-loads 150 bun bench/gpu/diag/hedged-loads.ts --bundle "$WORK/models/resnet50" \
        --batches 1,32 --settings "${HEDGED_SETTINGS:-4:0,4:1,4:3}" --rounds "${HEDGED_ROUNDS:-5}" --results-dir "$RES"
      ;;
    thread-loads)
      for b in 1 32; do
        run_step thread-loads-b$b 90 bun bench/gpu/diag/thread-vs-main-loads.ts "${XLASERVE_PJRT_PLUGIN:-}" \
          "$WORK/models/resnet50" $b 15
        grep '^{"program"' "$LOGS/thread-loads-b$b.log" >>"$RES/thread-loads-$STAMP.jsonl"
      done
      ;;
    restart)
      compiled=$(ls -t "$RES"/pjrt-compile-load-*.json 2>/dev/null | head -1)
      run_step restart 300 bun bench/gpu/pjrt-restart.bench.ts --models "$WORK/models" \
        --serialized "$WORK/serialized" ${compiled:+--compile-results "$compiled"} --rounds 5 --runs 200
      ;;
    restart-pinned)
      run_step cpu-speeds 120 bun bench/gpu/diag/cpu-speeds.ts 3 --pick 4
      save_json_line cpu-speeds "$RES/cpu-speeds-$STAMP.json"
      compiled=$(ls -t "$RES"/pjrt-compile-load-*.json 2>/dev/null | head -1)
      for which in picked slowest; do
        cpus=$(python3 -c 'import json,sys; print(",".join(map(str, json.load(open(sys.argv[1]))[sys.argv[2]] or [])))' \
          "$RES/cpu-speeds-$STAMP.json" "$which" 2>/dev/null)
        [ -n "$cpus" ] || { echo "restart-pinned: no CPU list ($which)"; continue; }
        run_step "restart-cpus-$which" 300 taskset -c "$cpus" bun bench/gpu/pjrt-restart.bench.ts --models "$WORK/models" \
          --serialized "$WORK/serialized" ${compiled:+--compile-results "$compiled"} --rounds 5
      done
      ;;
    first-result)
      prog=()
      [ -f "$WORK/serialized/resnet50.b1.pjrt" ] && prog=(--program "$WORK/serialized/resnet50.b1.pjrt")
      run_step first-result 240 bun bench/gpu/first-result.bench.ts --bundle "$WORK/models/resnet50" \
        "${prog[@]}" --runs 3 --jax-cache "$WORK/jax-cache"
      ;;
    worker-start)
      run_step worker-start 330 bun bench/gpu/worker-start.bench.ts --models "$WORK/models" --engine pjrt \
        --runs 1 --warm-per-cold 6 ${WORKER_START_SETTINGS:---load-threads 0,4} --keep-repo "$WORK/warm-repo" --timeout-s 280
      ;;
    fleet-join)
      run_step fleet-join 330 bun bench/fleet-join.bench.ts --models "$WORK/models" --engine pjrt \
        --catalog sqlite --runs 3 --timeout-s 280
      ;;
    reload-stall)
      from=()
      [ -f "$WORK/warm-repo/resnet50/manifest.yaml" ] && from=(--repo-from "$WORK/warm-repo")
      run_step reload-stall 240 bun bench/gpu/reload-stall.bench.ts --models "$WORK/models" "${from[@]}"
      ;;
    memory)
      from=()
      [ -f "$WORK/warm-repo/resnet50/manifest.yaml" ] && from=(--resnet-from "$WORK/warm-repo/resnet50")
      run_step memory 300 bun bench/gpu/memory-probe.bench.ts --models "$WORK/models" "${from[@]}" \
        --engine pjrt --requests 5 --timeout-s 240
      ;;
    memory-worker)
      if [ -f bench/memory-probe.bench.ts ]; then
        rm -rf "$WORK/models-no-resnet"; mkdir -p "$WORK/models-no-resnet"
        for m in mlp cnn transformer; do [ -d "$WORK/models/$m" ] && cp -r "$WORK/models/$m" "$WORK/models-no-resnet/"; done
        run_step memory-worker 240 bun bench/memory-probe.bench.ts --engine pjrt --plugin "${XLASERVE_PJRT_PLUGIN:-}" \
          --repository "$WORK/models-no-resnet" --add "$WORK/models/resnet50" --out "$RES/memory-probe-worker-pjrt-$STAMP.json"
      else
        echo "{\"step\":\"memory-worker\",\"skipped\":true,\"reason\":\"bench/memory-probe.bench.ts missing\"}" >>"$STEPS"
      fi
      ;;
    gpu-tests)
      # The GPU test files (tests/gpu) and the PJRT unit tests on the real host; figures to JSON.
      run_step gpu-tests 240 env XLASERVE_GPU_RESULTS="$RES/gpu-tests-$STAMP.json" \
        bun test tests/gpu packages/backend-pjrt/test
      ;;
    http)
      # The CPU engine on this host's 16 cores, then the MLP on the GPU through PJRT.
      run_step http 120 bun bench/http.bench.ts --engine reactant --results-dir "$RES"
      if [ -n "${XLASERVE_PJRT_PLUGIN:-}" ]; then
        run_step http-pjrt 120 bun bench/http.bench.ts --engine pjrt --results-dir "$RES"
      else
        echo "http-pjrt: skipped, no PJRT plugin on this host (setup found none)"
      fi
      ;;
    grpc)
      # gRPC on this host's cores: the CPU engine, then the MLP on the GPU through PJRT.
      run_step grpc 240 bun bench/grpc.bench.ts --engine reactant --results-dir "$RES"
      if [ -n "${XLASERVE_PJRT_PLUGIN:-}" ]; then
        run_step grpc-pjrt 240 bun bench/grpc.bench.ts --engine pjrt --results-dir "$RES"
        # The same with the worker coalescing queued requests: one-row executions are bound by
        # the device round trip, not by either protocol.
        run_step grpc-pjrt-coalescing 240 bun bench/grpc.bench.ts --engine pjrt --dynamic-batching --large-runs 1 \
          --results-dir "$RES"
      else
        echo "grpc-pjrt: skipped, no PJRT plugin on this host (setup found none)"
      fi
      ;;
    fairness)
      # Whether the device's second execution slot is what a light model's p99 waits behind.
      if [ -n "${XLASERVE_PJRT_PLUGIN:-}" ] && [ -f "$WORK/models/resnet50/manifest.yaml" ]; then
        for slots in 0 1; do
          run_step "fairness-pjrt-in-flight-$slots" 120 bun bench/offered-load.bench.ts --engine pjrt \
            --plugin "$XLASERVE_PJRT_PLUGIN" --models "$WORK/models" --resnet "$WORK/models/resnet50" --clients 64 \
            --light-rate 200 --duration-s 2 --wire binary --only fairness --max-in-flight "$slots" --results-dir "$RES"
        done
      else
        echo "fairness: skipped, no PJRT plugin or ResNet-50 export on this host"
      fi
      ;;
    scheduler)
      # PJRT first (the figure the goal is about), with the exported MLP and ResNet-50, inputs and
      # outputs as binary tensor data (a ResNet-50 input as JSON numbers costs the HTTP thread more
      # than the GPU's run); then the CPU engine on the examples. 64 clients: one fetch loop per
      # client in one process.
      if [ -n "${XLASERVE_PJRT_PLUGIN:-}" ] && [ -f "$WORK/models/resnet50/manifest.yaml" ]; then
        run_step scheduler-pjrt 300 bun bench/offered-load.bench.ts --engine pjrt --plugin "$XLASERVE_PJRT_PLUGIN" \
          --models "$WORK/models" --resnet "$WORK/models/resnet50" --clients 64 --light-rate 200 --duration-s 2 \
          --wire binary --results-dir "$RES"
        # The same flood with the flooding model's queue and batch bounded (what an operator sets
        # so one flood batch cannot hold the device long), and the host path alone: a synthetic
        # ResNet-shaped bundle whose compute is one slice.
        run_step scheduler-pjrt-fair-bounded 150 bun bench/offered-load.bench.ts --engine pjrt \
          --plugin "$XLASERVE_PJRT_PLUGIN" --models "$WORK/models" --resnet "$WORK/models/resnet50" --clients 64 \
          --light-rate 200 --duration-s 2 --wire binary --only fairness --flood-factor 10 --flood-queue-depth 8 \
          --flood-max-batch 8 --results-dir "$RES"
        run_step scheduler-pjrt-image 150 bun bench/offered-load.bench.ts --engine pjrt --plugin "$XLASERVE_PJRT_PLUGIN" \
          --models "$WORK/models" --image --clients 64 --duration-s 2 --wire binary --only resnet --results-dir "$RES"
      else
        echo "scheduler: PJRT skipped: no PJRT plugin (XLASERVE_PJRT_PLUGIN) or no exported ResNet-50 in $WORK/models"
        echo "{\"step\":\"scheduler-pjrt\",\"skipped\":true,\"reason\":\"no PJRT plugin or no exported resnet50\"}" >>"$STEPS"
      fi
      # With the host's JAX exports of the same examples: XLA CPU's own coalescing ceiling beside
      # the engine's (whether any scheduler could reach 3x on that program on a CPU).
      xla=(); [ -d "$WORK/models" ] && xla=(--xla-models "$WORK/models")
      [ "${SCHEDULER_CPU:-1}" = 0 ] && { echo "scheduler: CPU engine part skipped (SCHEDULER_CPU=0)"; continue; }
      run_step scheduler-cpu 360 bun bench/offered-load.bench.ts --engine reactant --clients 64 --light-rate 40 \
        --duration-s 2 "${xla[@]}" --results-dir "$RES"
      ;;
    http-vs-reuseport)
      for n in 2 4 8; do
        [ "$n" -le "$(nproc)" ] || continue
        run_step "http-vs-reuseport-$n" 150 bun bench/http-vs-reuseport.bench.ts --processes "$n" --results-dir "$RES"
      done
      ;;
    cpu)
      run_step cpu 300 bun bench/cpu/engine-vs-xla.bench.ts --models "$WORK/models" \
        --only cnn,transformer,resnet50 --cores 0,1 --runs 20 --profile-runs 3
      ;;
    portable)
      # The examples exported by this host's jax both ways (text, --portable), then checked
      # against each other on the CPU engine: signatures, byte-identical outputs, read times.
      mkdir -p "$WORK/portable"
      for m in mlp cnn transformer resnet50; do
        extra=(); [ "$m" = resnet50 ] && extra=(--batch-sizes 1)
        run_step "portable-export-$m" 120 python3 tools/export_jax_bundle.py "$m" "$WORK/portable/$m" --name "$m" "${extra[@]}"
        run_step "portable-export-$m-portable" 120 python3 tools/export_jax_bundle.py "$m" "$WORK/portable/$m-portable" --name "$m-portable" --portable "${extra[@]}"
      done
      run_step portable-twins 240 bun bench/cpu/portable-twins.bench.ts --models "$WORK/portable" --results-dir "$RES"
      # ResNet-50's 1.18 artifact: decode + plan against parse + plan of its text twin, on quiet cores.
      run_step portable-decode 300 bun bench/cpu/portable-decode.bench.ts \
        --text "$(ls "$WORK"/portable/resnet50/model*.mlir | head -1)" \
        --portable "$(ls "$WORK"/portable/resnet50-portable/model*.mlir | head -1)" --results-dir "$RES"
      ;;
    zoo)
      # The zoo's bundles are committed (tests/zoo/models): no export step.
      last=$(( $(nproc) - 1 ))
      run_step zoo-all-cores 300 bun bench/cpu/zoo.bench.ts --cores "0-$last" --results-dir "$RES"
      run_step zoo-2-cores 240 bun bench/cpu/zoo.bench.ts --cores 0,1 --results-dir "$RES"
      ;;
  esac
done

# ---- collect ----------------------------------------------------------------------------------------
label=$(IFS=-; echo "${phases[*]}")
bun bench/gpu/summarize.ts "$RES" >"$OUT/summary-$label.json" 2>"$LOGS/summarize.log" \
  || python3 -c 'import json,sys; print(json.dumps({"summarize":"failed"}))' >"$OUT/summary-$label.json"
tar -czf "$OUT/results-$label.tar.gz" -C "$WORK/results" "$STAMP" 2>/dev/null
echo "run-all: done in $(elapsed)s; $OUT: $(ls "$OUT" | tr '\n' ' ')"
bun bench/gpu/summarize.ts "$RES" --text 2>/dev/null | head -60
exit 0
