/**
 * Every series name ReactantServer.jl's worker exports, so that its Grafana dashboards work
 * against xlaserve unchanged. Taken from EnzymeAD/ReactantServer.jl,
 * packages/ReactantServer/src/transport/metrics.jl: the `metric_names` of its
 * WorkerSnapshotCollector and AdmissionCollector and the two families WorkerMetrics registers
 * (worker_requests_total, worker_request_latency_seconds), across its versions (an earlier one
 * exported the largest free block and the fragmentation ratio, a later one process used and out
 * of pool). Its process_* series come from Prometheus.jl's ProcessCollector (PROCESS_NAMES).
 */
export const REACTANT_SERVER_NAMES = [
  // hot-path families
  "worker_requests_total",
  "worker_request_latency_seconds",
  // per model, from the scheduler
  "worker_dispatch_total",
  "worker_compute_seconds_total",
  "worker_queue_depth",
  "worker_queue_wait_seconds",
  "worker_model_resident",
  "worker_model_pinned",
  "worker_model_weight_bytes",
  "worker_requests_served_total",
  "worker_rows_served_total",
  "worker_model_max_batch_size",
  // the weight budget and the on-demand weight cache
  "worker_weight_cache_resident_bytes",
  "worker_weight_cache_max_bytes",
  "worker_weight_cache_pinned_bytes",
  "worker_weight_cache_max_scratch_bytes",
  "worker_weight_pool_bytes",
  "worker_weight_loads_total",
  "worker_weight_evicts_total",
  "worker_weight_load_seconds_total",
  // device memory
  "worker_device_memory_in_use_bytes",
  "worker_device_memory_limit_bytes",
  "worker_device_memory_free_bytes",
  "worker_device_memory_peak_in_use_bytes",
  "worker_device_memory_largest_free_block_bytes",
  "worker_device_memory_pool_bytes",
  "worker_device_memory_fragmentation_ratio",
  "worker_device_memory_process_used_bytes",
  "worker_device_memory_out_of_pool_bytes",
  // server-level
  "worker_models_loaded",
  "worker_models_resident",
  "worker_resident_weight_bytes",
  "worker_info",
  // admission
  "worker_inflight_requests",
  "worker_requests_shed_total",
  "worker_max_concurrent_requests",
] as const;

/** The process series both export (prom-client's default metrics here). */
export const PROCESS_NAMES = [
  "process_cpu_seconds_total",
  "process_resident_memory_bytes",
  "process_start_time_seconds",
  "process_open_fds",
] as const;
