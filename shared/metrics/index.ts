import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

/**
 * The hub's Prometheus metrics. One registry per process (so tests can create several hubs), passed
 * to factories as a dependency; `expose()` renders it for /metrics.
 */
export interface HubMetrics {
  readonly registry: Registry;
  /** POST /run answers: outcome accepted | replayed | refused, with the problem code when refused. */
  readonly runs: Counter<"outcome" | "code">;
  /** Status events appended, by new status and route. */
  readonly transitions: Counter<"status" | "route">;
  /** Seconds from run.requested to a final status, by route. */
  readonly latency: Histogram<"route">;
  /** Events in the stream the projector has not applied yet. */
  readonly projectorLag: Gauge;
  /** Events in the stream the search index has not applied yet (issue 16). */
  readonly indexLag: Gauge;
  /** Pending (undelivered) and redelivered counts per durable consumer. */
  readonly consumerPending: Gauge<"consumer">;
  readonly consumerAckPending: Gauge<"consumer">;
  readonly consumerRedelivered: Gauge<"consumer">;
  /** Callback attempts by outcome: delivered | retry | failed | gone. */
  readonly callbackAttempts: Counter<"outcome">;
  /** Jobs this executor process is running, by route. */
  readonly executorInFlight: Gauge<"route">;
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
    consumerPending: new Gauge({
      name: "switchyard_consumer_pending",
      help: "Messages not yet delivered to a durable consumer",
      labelNames: ["consumer"],
      registers,
    }),
    consumerAckPending: new Gauge({
      name: "switchyard_consumer_ack_pending",
      help: "Messages delivered and not yet acknowledged",
      labelNames: ["consumer"],
      registers,
    }),
    consumerRedelivered: new Gauge({
      name: "switchyard_consumer_redelivered",
      help: "Messages redelivered at least once and still pending acknowledgement",
      labelNames: ["consumer"],
      registers,
    }),
    callbackAttempts: new Counter({
      name: "switchyard_callback_attempts_total",
      help: "Callback delivery attempts by outcome",
      labelNames: ["outcome"],
      registers,
    }),
    executorInFlight: new Gauge({
      name: "switchyard_executor_in_flight",
      help: "Jobs running in this executor process, by route",
      labelNames: ["route"],
      registers,
    }),
    async expose() {
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
  };
}
