import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

/**
 * The hub's Prometheus metrics. One registry per process (so tests can create several hubs), passed
 * to factories as a dependency; `expose()` renders it for /metrics.
 */
export interface HubMetrics {
  readonly registry: Registry;
  /** POST /run answers: outcome accepted | replayed | refused, with the problem code when refused. */
  readonly runs: Counter<"outcome" | "code">;
  /** Status events the executor appended, by new status and route. */
  readonly transitions: Counter<"status" | "route">;
  /** Seconds from run accepted to a final status, by route (observed by the projector). */
  readonly latency: Histogram<"route">;
  /** Jobs that reached a final status, by route, status and error code (projector). */
  readonly jobsCompleted: Counter<"route" | "status" | "code">;
  /** Events in the stream the projector has not applied yet. */
  readonly projectorLag: Gauge;
  /** Events in the stream the search index has not applied yet (issue 16). */
  readonly indexLag: Gauge;
  /** Age of the oldest event the projector has not applied yet (0 when caught up). */
  readonly projectorLagSeconds: Gauge;
  /** Pending (undelivered), ack pending and redelivered counts per durable consumer and stream. */
  readonly consumerPending: Gauge<"stream" | "consumer">;
  readonly consumerAckPending: Gauge<"stream" | "consumer">;
  readonly consumerRedelivered: Gauge<"stream" | "consumer">;
  /** Size of each hub stream, and its configured limits where it has them. */
  readonly streamMessages: Gauge<"stream">;
  readonly streamBytes: Gauge<"stream">;
  readonly streamLimitMessages: Gauge<"stream">;
  readonly streamLimitBytes: Gauge<"stream">;
  /** Callback attempts by outcome: delivered | retry | failed | gone. */
  readonly callbackAttempts: Counter<"outcome">;
  /** Seconds from run accepted to its callback delivered or failed, by route and outcome. */
  readonly callbackLatency: Histogram<"route" | "outcome">;
  /** Jobs this executor process is running, by route. */
  readonly executorInFlight: Gauge<"route">;
  /** Partitions of a read model (projector, indexer) this process holds now. */
  readonly partitionsHeld: Gauge<"group">;
  /** Full collections a read-models process ran while folding a backlog. */
  readonly backlogCollections: Counter;
  /** The time those collections took. */
  readonly backlogCollectionSeconds: Counter;
  /** 1 for each service this process runs (alerts on a service nobody runs). */
  readonly serviceInfo: Gauge<"service">;
  expose(): Promise<{ contentType: string; body: string }>;
}

/** Creates the registry with process metrics and the hub's own. */
export function createMetrics(options: { defaultMetrics?: boolean } = {}): HubMetrics {
  const registry = new Registry();
  if (options.defaultMetrics ?? true) {
    // The event-loop delay histogram samples every 10 ms by default: about 0.005 cores per idle
    // process, half of the whole hub's idle budget. Sampled each second it costs a wake-up a second;
    // the lag gauge (measured at scrape) still shows a stalled loop.
    collectDefaultMetrics({
      register: registry,
      prefix: "switchyard_",
      eventLoopMonitoringPrecision: 1_000,
    });
  }
  const registers = [registry];
  return {
    registry,
    runs: new Counter({
      name: "switchyard_runs_total",
      help: "POST /run answers by outcome (accepted, replayed, refused) and problem code",
      labelNames: ["outcome", "code"],
      registers,
    }),
    transitions: new Counter({
      name: "switchyard_job_transitions_total",
      help: "Job status events appended, by status and route",
      labelNames: ["status", "route"],
      registers,
    }),
    latency: new Histogram({
      name: "switchyard_job_completion_seconds",
      help: "Seconds from run accepted to final status, by route",
      labelNames: ["route"],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900],
      registers,
    }),
    jobsCompleted: new Counter({
      name: "switchyard_jobs_completed_total",
      help: "Jobs that reached a final status, by route, status (done, error, rejected) and error code",
      labelNames: ["route", "status", "code"],
      registers,
    }),
    projectorLag: new Gauge({
      name: "switchyard_projector_lag_events",
      help: "Events in the stream not yet applied to the job view",
      registers,
    }),
    indexLag: new Gauge({
      name: "switchyard_index_lag_events",
      help: "Events in the stream not yet applied to the search index",
      registers,
    }),
    projectorLagSeconds: new Gauge({
      name: "switchyard_projector_lag_seconds",
      help: "Age of the oldest event not yet applied to the job view (0 when caught up)",
      registers,
    }),
    consumerPending: new Gauge({
      name: "switchyard_consumer_pending",
      help: "Messages not yet delivered to a durable consumer",
      labelNames: ["stream", "consumer"],
      registers,
    }),
    consumerAckPending: new Gauge({
      name: "switchyard_consumer_ack_pending",
      help: "Messages delivered and not yet acknowledged",
      labelNames: ["stream", "consumer"],
      registers,
    }),
    consumerRedelivered: new Gauge({
      name: "switchyard_consumer_redelivered",
      help: "Messages redelivered at least once and still pending acknowledgement",
      labelNames: ["stream", "consumer"],
      registers,
    }),
    partitionsHeld: new Gauge({
      name: "switchyard_partitions_held",
      help: "Partitions of a read model (group: projector, indexer) this process holds now",
      labelNames: ["group"],
      registers,
    }),
    backlogCollections: new Counter({
      name: "switchyard_backlog_collections_total",
      help: "Full garbage collections a read-models process ran while a read model folded a backlog",
      registers,
    }),
    backlogCollectionSeconds: new Counter({
      name: "switchyard_backlog_collection_seconds_total",
      help: "Seconds the backlog collections of a read-models process took",
      registers,
    }),
    streamMessages: new Gauge({
      name: "switchyard_stream_messages",
      help: "Messages stored in a hub stream",
      labelNames: ["stream"],
      registers,
    }),
    streamBytes: new Gauge({
      name: "switchyard_stream_bytes",
      help: "Bytes stored in a hub stream",
      labelNames: ["stream"],
      registers,
    }),
    streamLimitMessages: new Gauge({
      name: "switchyard_stream_limit_messages",
      help: "A hub stream's max_msgs, for streams that have one",
      labelNames: ["stream"],
      registers,
    }),
    streamLimitBytes: new Gauge({
      name: "switchyard_stream_limit_bytes",
      help: "A hub stream's byte limit, for streams that have one (the events stream: nats.events_max_bytes)",
      labelNames: ["stream"],
      registers,
    }),
    callbackAttempts: new Counter({
      name: "switchyard_callback_attempts_total",
      help: "Callback delivery attempts by outcome",
      labelNames: ["outcome"],
      registers,
    }),
    callbackLatency: new Histogram({
      name: "switchyard_callback_completion_seconds",
      help: "Seconds from run accepted to its callback delivered or failed, by route and outcome",
      labelNames: ["route", "outcome"],
      // Callbacks retry for about 28 hours.
      buckets: [
        0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 21_600, 86_400,
      ],
      registers,
    }),
    executorInFlight: new Gauge({
      name: "switchyard_executor_in_flight",
      help: "Jobs running in this executor process, by route",
      labelNames: ["route"],
      registers,
    }),
    serviceInfo: new Gauge({
      name: "switchyard_service_info",
      help: "1 for each service this process runs",
      labelNames: ["service"],
      registers,
    }),
    async expose() {
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
  };
}
