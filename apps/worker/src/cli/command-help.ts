/** Each command's own --help: its usage, what it does, and the flags that matter to it. */
export const COMMAND_HELP: Readonly<Record<string, string>> = {
  serve: `Usage: xlaserve serve [options]

Serves the model repository over HTTP (KServe v2 / Open Inference Protocol), and gRPC beside it.
The port is checked before any model loads. Ctrl-C or SIGTERM drains and stops.

Options:
  --repository DIR     model repository (XLASERVE_MODEL_REPOSITORY; default examples/models)
  --port N             HTTP port (XLASERVE_PORT; default 8000; 0 picks a free one)
  --host ADDR          interface to bind (XLASERVE_HOST; default 127.0.0.1)
  --grpc-port N        gRPC port (default 8001; 0 turns it off)
  --engine NAME        auto | pjrt | reactant (XLASERVE_ENGINE)
  --plugin PATH        PJRT plugin (.so) (XLASERVE_PJRT_PLUGIN)
  --config FILE        YAML or JSON configuration file
  --state-dir DIR      the program cache's index (default .state)
  --no-cache           compile every program at start; use no program cache
  --no-watch           do not watch the repository
  --memory-limit N     memory the weight budget is computed from (e.g. 2G)
  --residency M=R      residency of model M: pinned | device | host (repeatable)
  --per-model N        requests run at once per model
  --queue-depth N      requests queued per model before 429
  --dynamic-batching   coalesce concurrent requests into one execution
  --discipline D       fifo | fair | edf: which model's queue the device serves next
  --max-queue-delay-us N  how long a partial coalesced batch may wait to fill
  --batch-size-choice C  throughput | fill: the compiled size a coalesced execution runs at
  --auth-token T       bearer token for repository load/unload (XLASERVE_AUTH_TOKEN)
  --log-level L        debug | info | warn | error
  --log-format F       auto | json | text (default auto: text on a terminal, json otherwise)

Every flag: xlaserve --help
`,
  compile: `Usage: xlaserve compile <repository> [options]

Compiles every program of every bundle in <repository> for this machine's engine and stores it in
the program cache, so that a worker started later loads it in milliseconds. Programs already in the
cache are loaded and checked, not compiled again. Progress is shown per program.

Options:
  --no-cache           compile every program again, replacing what the cache holds
  --engine NAME        auto | pjrt | reactant
  --plugin PATH        PJRT plugin (.so)
  --state-dir DIR      the program cache's index (default .state)
  --config FILE        YAML or JSON configuration file
`,
  cache: `Usage: xlaserve cache ls [options]
       xlaserve cache verify [options]
       xlaserve cache prune --max-bytes N [options]

ls lists the program cache's entries; verify reads every entry in full and removes the bad ones
(exit 1 when it removed any); prune removes the least recently hit entries until the cache holds
at most N bytes (e.g. 500M, 2G).

Options:
  --repository DIR     model repository whose bundles' caches to look at
  --state-dir DIR      the program cache's index (default .state)
  --max-bytes N        (prune) the size to prune down to
`,
};
