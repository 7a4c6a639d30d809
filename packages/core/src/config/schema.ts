import { type Static, Type } from "@sinclair/typebox";

/**
 * The worker's whole configuration, one typebox schema with every default. Unknown keys are
 * errors (a misspelt key would otherwise be silently ignored). Field names are camelCase; the
 * environment form is XLASERVE_<SECTION>__<FIELD_IN_SNAKE_CASE>.
 */

const MiB = 1024 * 1024;

const section = { additionalProperties: false, default: {} } as const;

export const EngineSchema = Type.Union([Type.Literal("auto"), Type.Literal("pjrt"), Type.Literal("reactant")], {
  default: "auto",
  description: "auto: PJRT when a compatible plugin loads, else the CPU engine",
});

export const ConfigSchema = Type.Object(
  {
    engine: EngineSchema,
    pjrt: Type.Object(
      {
        plugin: Type.Optional(Type.String({ minLength: 1, description: "path of a PJRT plugin (.so)" })),
        memoryFraction: Type.Number({ exclusiveMinimum: 0, maximum: 1, default: 0.75 }),
        preallocate: Type.Boolean({ default: false }),
        deterministic: Type.Boolean({ default: false }),
        keepLocations: Type.Boolean({
          default: false,
          description:
            "compile modules with their source locations (XLA keeps them as metadata that every load of the program parses again)",
        }),
        compileInChild: Type.Boolean({
          default: true,
          description: "compile in a child process so a compiler crash cannot take the worker down",
        }),
        loadThreads: Type.Integer({
          minimum: 0,
          maximum: 16,
          default: 4,
          description:
            "threads that load compiled programs into the PJRT client (a load is CPU work inside the plugin, and loads on several threads overlap); 0 loads on the engine thread",
        }),
        eventWait: Type.Union([Type.Literal("auto"), Type.Literal("callback"), Type.Literal("poll")], {
          default: "auto",
          description:
            "how the engine waits for the device: auto polls on event-loop turns for autoPollMs, then takes PJRT's ready callback; callback takes the callback at once (no CPU while waiting, about 0.5 ms later); poll keeps polling",
        }),
        autoPollMs: Type.Number({
          minimum: 0,
          maximum: 1000,
          default: 5,
          description: "how long eventWait auto polls before it takes PJRT's ready callback",
        }),
        hedgeLoads: Type.Integer({
          minimum: 0,
          maximum: 15,
          default: 1,
          description:
            "extra copies of a program load run on loader threads left idle; the first one loaded is kept (a load's time depends on the CPU it lands on)",
        }),
      },
      section,
    ),
    server: Type.Object(
      {
        host: Type.String({ minLength: 1, default: "127.0.0.1" }),
        port: Type.Integer({ minimum: 0, maximum: 65535, default: 8000 }),
        maxBodyBytes: Type.Integer({ minimum: 1, default: 64 * MiB }),
        authToken: Type.Optional(Type.String({ minLength: 1 })),
        readiness: Type.Union([Type.Literal("strict"), Type.Literal("lenient")], {
          default: "strict",
          description:
            "strict: /v2/health/ready is 200 only while every model of the repository serves; lenient: while at least one does (never with none)",
        }),
        reusePort: Type.Boolean({
          default: false,
          description:
            "bind the port with SO_REUSEPORT, so several worker processes (xlaserve node's CPU workers) share it and the kernel spreads connections over them",
        }),
        grpcPort: Type.Integer({
          minimum: 0,
          maximum: 65535,
          default: 8001,
          description: "port of the gRPC service (inference.GRPCInferenceService) beside the REST API; 0 turns it off",
        }),
        grpcMaxMessageBytes: Type.Integer({
          minimum: 1,
          default: 512 * MiB,
          description: "largest gRPC message received or sent (a request or an answer, tensors included)",
        }),
        grpcTlsCert: Type.Optional(
          Type.String({
            minLength: 1,
            description: "PEM certificate chain file: the gRPC port serves TLS (with grpcTlsKey) instead of h2c",
          }),
        ),
        grpcTlsKey: Type.Optional(Type.String({ minLength: 1, description: "PEM private key file of grpcTlsCert" })),
        grpcTlsCa: Type.Optional(
          Type.String({ minLength: 1, description: "PEM CA file: gRPC clients must present a certificate it signed" }),
        ),
      },
      section,
    ),
    repository: Type.Object(
      {
        path: Type.String({ minLength: 1, default: "examples/models" }),
        dynamic: Type.Boolean({ default: true, description: "watch the repository and load/reload/unload bundles" }),
        pollIntervalMs: Type.Integer({ minimum: 10, default: 2000 }),
        followLinksOutside: Type.Boolean({
          default: false,
          description:
            "serve a model folder that is a symbolic link to a folder outside the repository (its .cache/ is written there); refused by default",
        }),
      },
      section,
    ),
    cache: Type.Object(
      {
        enabled: Type.Boolean({ default: true }),
        stateDir: Type.String({ minLength: 1, default: ".state" }),
        catalog: Type.String({
          minLength: 1,
          pattern: "^(sqlite|postgres(ql)?://.+)$",
          default: "sqlite",
          description:
            "the fleet catalog of compiled programs: sqlite (in the state directory, for the workers of one host) or a postgres:// URL shared by every worker; used with cache.store",
        }),
        store: Type.Optional(
          Type.String({
            minLength: 1,
            description:
              "the fleet's shared program store: a directory every worker mounts, or s3://bucket/prefix; set, each program is compiled once across the fleet and loaded everywhere",
          }),
        ),
        leaseMs: Type.Integer({
          minimum: 1000,
          default: 30_000,
          description:
            "a fleet compile lease not renewed for this long has lapsed (its holder died) and another worker takes the compile over",
        }),
      },
      section,
    ),
    memory: Type.Object(
      {
        weightFraction: Type.Number({ exclusiveMinimum: 0, maximum: 1, default: 0.9 }),
        wiggle: Type.Number({ minimum: 0, exclusiveMaximum: 1, default: 0.1 }),
        defaultResidency: Type.Union([Type.Literal("device"), Type.Literal("host")], { default: "device" }),
        // Added by the worker (apps/worker): the CPU engine's memory limit and per-model residency.
        limitBytes: Type.Optional(
          Type.Integer({
            minimum: 1,
            description:
              "memory limit the weight budget is computed from; default: the device's limit, else the machine's memory",
          }),
        ),
        residency: Type.Record(
          Type.String(),
          Type.Union([Type.Literal("pinned"), Type.Literal("device"), Type.Literal("host")]),
          {
            default: {},
            description: "per-model residency: pinned, device (LRU-evicted) or host (loaded per request)",
          },
        ),
      },
      section,
    ),
    concurrency: Type.Object(
      {
        // Requests admitted to run at once per model. Unset: 16 on the CPU engine, whose thread runs
        // one program at a time (the admitted requests wait in its message queue and travel to it
        // together: one message and one wake-up for several requests), 4 on PJRT, where each
        // admitted execution can hold its own device scratch.
        perModel: Type.Optional(Type.Integer({ minimum: 1 })),
        queueDepth: Type.Integer({ minimum: 1, default: 64 }),
        // Off by default: coalesced requests run on a larger compiled program, whose answer for a
        // row can differ in the last bits from the program of the request's own batch size, so a
        // request's output would depend on other traffic. On, throughput roughly doubles.
        dynamicBatching: Type.Boolean({ default: false }),
      },
      section,
    ),
    scheduler: Type.Object(
      {
        discipline: Type.Union([Type.Literal("fifo"), Type.Literal("fair"), Type.Literal("edf")], {
          default: "fifo",
          description:
            "which model's queue the device serves next: fifo (oldest request), fair (deficit-weighted by each model's recent compute, scaled by its weight) or edf (earliest deadline first, shedding requests that cannot finish in time)",
        }),
        maxInFlight: Type.Integer({
          minimum: 0,
          default: 0,
          description:
            "executions on the device at once, across models; 0: no device-wide bound under fifo (each model's concurrency.perModel), 1 on a serial engine (the CPU engine) and 2 otherwise under fair and edf, so requests wait where the discipline orders them; under fair and edf the last free one is kept for a model with nothing in flight",
        }),
        maxQueued: Type.Integer({
          minimum: 0,
          default: 0,
          description:
            "requests queued across every model before more are refused with 429 (0: only each model's queueDepth)",
        }),
        maxQueueDelayUs: Type.Number({
          minimum: 0,
          default: 0,
          description:
            "with dynamic batching, how long the oldest queued request may wait for more to fill a batch before a partial batch runs",
        }),
        batchSizeChoice: Type.Union([Type.Literal("throughput"), Type.Literal("fill")], {
          default: "throughput",
          description:
            "with dynamic batching, the compiled size a coalesced execution runs at: throughput (the size that runs the queued rows fastest by each size's measured cost, padding included) or fill (the largest size the queue fills, else the smallest, padded: sizes follow the traffic alone)",
        }),
        defaultPriority: Type.Integer({
          minimum: 1,
          default: 100,
          description: "priority level of a request that gives none (or 0); lower levels are served first",
        }),
        emaHalfLifeMs: Type.Number({
          exclusiveMinimum: 0,
          default: 1000,
          description: "fair: half-life of each model's recent-compute average",
        }),
        costAlpha: Type.Number({
          exclusiveMinimum: 0,
          maximum: 1,
          default: 0.3,
          description: "weight of the newest measurement in each (model, batch size) cost average",
        }),
        fairnessCap: Type.Number({
          exclusiveMinimum: 0,
          default: 1,
          description: "fair: bound on a model's deficit, so no model is locked out or dominates for long",
        }),
        models: Type.Record(
          Type.String(),
          Type.Object(
            {
              weight: Type.Optional(
                Type.Number({ exclusiveMinimum: 0, description: "fair: share of device time (default 1)" }),
              ),
              maxBatchSize: Type.Optional(
                Type.Integer({ minimum: 1, description: "rows coalesced into one execution at most" }),
              ),
              preferredBatchSizes: Type.Optional(
                Type.Array(Type.Integer({ minimum: 1 }), {
                  description: "compiled batch sizes to run at whenever the queue can fill one",
                }),
              ),
              maxQueueDelayUs: Type.Optional(Type.Number({ minimum: 0 })),
              queueDepth: Type.Optional(Type.Integer({ minimum: 1 })),
            },
            { additionalProperties: false },
          ),
          {
            default: {},
            description: "per-model scheduling: weight, maxBatchSize, preferredBatchSizes, maxQueueDelayUs, queueDepth",
          },
        ),
      },
      section,
    ),
    placement: Type.Object(
      {
        engineThread: Type.Boolean({
          default: true,
          description:
            "run the backend on its own thread, so compute and PJRT's launch work never hold up the HTTP event loop (false: on the main thread)",
        }),
        inlineMaxUs: Type.Number({
          minimum: 0,
          default: 50,
          description:
            "programs whose measured run takes at most this many microseconds run on the HTTP thread instead of the engine thread (the CPU engine; 0 turns it off)",
        }),
      },
      section,
    ),
    log: Type.Object(
      {
        level: Type.Union([Type.Literal("debug"), Type.Literal("info"), Type.Literal("warn"), Type.Literal("error")], {
          default: "info",
        }),
        format: Type.Union([Type.Literal("auto"), Type.Literal("json"), Type.Literal("text")], {
          default: "auto",
          description: "auto: human-readable lines when stderr is a terminal, JSON lines otherwise",
        }),
      },
      section,
    ),
  },
  { additionalProperties: false },
);

export type Config = Static<typeof ConfigSchema>;
export type EngineName = Static<typeof EngineSchema>;
