/**
 * The panels of the Grafana dashboard (scripts/dashboard.ts builds the JSON from them). Hub gauges
 * are polled by every process, so they are aggregated with max, never sum.
 */

export interface Query {
  readonly expr: string;
  readonly legend: string;
}

export interface PanelSpec {
  readonly title: string;
  readonly description: string;
  readonly type: "timeseries" | "stat" | "piechart" | "heatmap";
  readonly unit: string;
  readonly queries: readonly Query[];
  /** Grid width (of 24); height is 8. */
  readonly width: number;
  /** Stacked areas (status mixes). */
  readonly stacked?: boolean;
}

export interface RowSpec {
  readonly title: string;
  readonly panels: readonly PanelSpec[];
}

const RATE = "$__rate_interval";
const ROUTE = 'route=~"$route"';

const quantiles = (metric: string, selector: string): Query[] =>
  ["0.5", "0.95", "0.99"].map((q) => ({
    expr: `histogram_quantile(${q}, sum by (le) (rate(${metric}_bucket{${selector}}[${RATE}])))`,
    legend: `p${Number(q) * 100}`,
  }));

export const ROWS: readonly RowSpec[] = [
  {
    title: "Traffic",
    panels: [
      {
        title: "Runs accepted",
        description: "POST /run answers per second: new jobs (202), replays (200) and refusals.",
        type: "timeseries",
        unit: "reqps",
        width: 8,
        queries: [
          {
            expr: `sum by (outcome) (rate(switchyard_runs_total[${RATE}]))`,
            legend: "{{outcome}}",
          },
        ],
      },
      {
        title: "Jobs completed",
        description:
          "Jobs reaching a final status per second, by status (counted by the projector).",
        type: "timeseries",
        unit: "ops",
        width: 8,
        stacked: true,
        queries: [
          {
            expr: `sum by (status) (rate(switchyard_jobs_completed_total{${ROUTE}}[${RATE}]))`,
            legend: "{{status}}",
          },
        ],
      },
      {
        title: "Status mix",
        description: "Final statuses and error codes over the selected time range.",
        type: "piechart",
        unit: "short",
        width: 8,
        queries: [
          {
            expr: `sum by (status, code) (increase(switchyard_jobs_completed_total{${ROUTE}}[$__range]))`,
            legend: "{{status}} {{code}}",
          },
        ],
      },
      {
        title: "Refusals by code",
        description: "POST /run refused, by problem code (auth, limits, validation, unavailable).",
        type: "timeseries",
        unit: "reqps",
        width: 12,
        stacked: true,
        queries: [
          {
            expr: `sum by (code) (rate(switchyard_runs_total{outcome="refused"}[${RATE}]))`,
            legend: "{{code}}",
          },
        ],
      },
      {
        title: "Errors and rejections by code",
        description: "Jobs that ended in error or rejected, by route and code.",
        type: "timeseries",
        unit: "ops",
        width: 12,
        stacked: true,
        queries: [
          {
            expr: `sum by (route, code) (rate(switchyard_jobs_completed_total{status!="done", ${ROUTE}}[${RATE}]))`,
            legend: "{{route}} {{code}}",
          },
        ],
      },
    ],
  },
  {
    title: "Latency",
    panels: [
      {
        title: "Submit → final status",
        description: "Run accepted to done, error or rejected.",
        type: "timeseries",
        unit: "s",
        width: 8,
        queries: quantiles("switchyard_job_completion_seconds", ROUTE),
      },
      {
        title: "Submit → callback delivered",
        description: "Run accepted to its completion callback delivered (first delivery).",
        type: "timeseries",
        unit: "s",
        width: 8,
        queries: quantiles(
          "switchyard_callback_completion_seconds",
          `outcome="delivered", ${ROUTE}`,
        ),
      },
      {
        title: "p95 submit → final status by route",
        description: "The 95th percentile per route.",
        type: "timeseries",
        unit: "s",
        width: 8,
        queries: [
          {
            expr: `histogram_quantile(0.95, sum by (le, route) (rate(switchyard_job_completion_seconds_bucket{${ROUTE}}[${RATE}])))`,
            legend: "{{route}}",
          },
        ],
      },
      {
        title: "Submit → final status distribution",
        description: "Completions per latency bucket.",
        type: "heatmap",
        unit: "s",
        width: 24,
        queries: [
          {
            expr: `sum by (le) (increase(switchyard_job_completion_seconds_bucket{${ROUTE}}[${RATE}]))`,
            legend: "{{le}}",
          },
        ],
      },
    ],
  },
  {
    title: "Callbacks",
    panels: [
      {
        title: "Callback attempts",
        description: "Callback POSTs per second by outcome: delivered, retry, failed, gone (410).",
        type: "timeseries",
        unit: "ops",
        width: 8,
        stacked: true,
        queries: [
          {
            expr: `sum by (outcome) (rate(switchyard_callback_attempts_total[${RATE}]))`,
            legend: "{{outcome}}",
          },
        ],
      },
      {
        title: "Callback success",
        description: "Share of callback attempts delivered.",
        type: "stat",
        unit: "percentunit",
        width: 8,
        queries: [
          {
            expr: `sum(rate(switchyard_callback_attempts_total{outcome="delivered"}[${RATE}])) / sum(rate(switchyard_callback_attempts_total[${RATE}]))`,
            legend: "delivered",
          },
        ],
      },
      {
        title: "Callbacks given up",
        description:
          "Callbacks that failed for good (retries exhausted, gone, refused), per route.",
        type: "timeseries",
        unit: "short",
        width: 8,
        queries: [
          {
            expr: `sum by (route) (increase(switchyard_callback_completion_seconds_count{outcome="failed", ${ROUTE}}[${RATE}]))`,
            legend: "{{route}}",
          },
        ],
      },
    ],
  },
  {
    title: "Backlogs",
    panels: [
      {
        title: "Undelivered (pending) by consumer",
        description:
          "Messages waiting for each durable consumer of every stream. Growing: a backlog.",
        type: "timeseries",
        unit: "short",
        width: 12,
        queries: [
          {
            expr: "max by (stream, consumer) (switchyard_consumer_pending)",
            legend: "{{stream}} {{consumer}}",
          },
        ],
      },
      {
        title: "Delivered, not acknowledged",
        description:
          "In hand or parked: running work, deadline timers and retries waiting for their time.",
        type: "timeseries",
        unit: "short",
        width: 12,
        queries: [
          {
            expr: "max by (stream, consumer) (switchyard_consumer_ack_pending)",
            legend: "{{stream}} {{consumer}}",
          },
        ],
      },
      {
        title: "Projector lag",
        description: "Age of the oldest event not yet in the job view, and how many events.",
        type: "timeseries",
        unit: "s",
        width: 8,
        queries: [
          { expr: "max(switchyard_projector_lag_seconds)", legend: "seconds behind" },
          { expr: "max(switchyard_projector_lag_events)", legend: "events behind" },
        ],
      },
      {
        title: "Redelivered",
        description: "Messages delivered more than once and still unacknowledged.",
        type: "timeseries",
        unit: "short",
        width: 8,
        queries: [
          {
            expr: "max by (stream, consumer) (switchyard_consumer_redelivered)",
            legend: "{{stream}} {{consumer}}",
          },
        ],
      },
      {
        title: "Executor work in flight",
        description: "Builtins and HTTP POSTs running, over every executor process.",
        type: "timeseries",
        unit: "short",
        width: 8,
        queries: [
          {
            expr: `sum by (route) (switchyard_executor_in_flight{${ROUTE}})`,
            legend: "{{route}}",
          },
        ],
      },
    ],
  },
  {
    title: "Streams and NATS",
    panels: [
      {
        title: "Hub streams",
        description: "Bytes stored per hub stream, and the limit where one is set.",
        type: "timeseries",
        unit: "bytes",
        width: 8,
        queries: [
          { expr: "max by (stream) (switchyard_stream_bytes)", legend: "{{stream}}" },
          { expr: "max by (stream) (switchyard_stream_limit_bytes)", legend: "{{stream}} limit" },
        ],
      },
      {
        title: "NATS stream usage",
        description: "Bytes per stream as the prometheus-nats-exporter reports them (-jsz=all).",
        type: "timeseries",
        unit: "bytes",
        width: 8,
        queries: [
          {
            expr: "max by (stream_name) (jetstream_stream_total_bytes)",
            legend: "{{stream_name}}",
          },
        ],
      },
      {
        title: "JetStream storage used",
        description: "Stored bytes over max_file_store per NATS server (prometheus-nats-exporter).",
        type: "timeseries",
        unit: "percentunit",
        width: 8,
        queries: [
          {
            expr: "max by (server_name) (jetstream_server_total_message_bytes) / max by (server_name) (jetstream_server_max_storage)",
            legend: "{{server_name}}",
          },
        ],
      },
    ],
  },
  {
    title: "Processes",
    panels: [
      {
        title: "Processes per service",
        description: "Scraped processes running each service.",
        type: "timeseries",
        unit: "short",
        width: 6,
        queries: [{ expr: "sum by (service) (switchyard_service_info)", legend: "{{service}}" }],
      },
      {
        title: "CPU",
        description: "CPU seconds per second of each process.",
        type: "timeseries",
        unit: "percentunit",
        width: 6,
        queries: [
          {
            expr: `rate(switchyard_process_cpu_seconds_total[${RATE}])`,
            legend: "{{instance}}",
          },
        ],
      },
      {
        title: "Resident memory",
        description: "RSS of each process.",
        type: "timeseries",
        unit: "bytes",
        width: 6,
        queries: [{ expr: "switchyard_process_resident_memory_bytes", legend: "{{instance}}" }],
      },
      {
        title: "Event loop lag",
        description: "Event loop delay of each process, measured at scrape.",
        type: "timeseries",
        unit: "s",
        width: 6,
        queries: [{ expr: "switchyard_nodejs_eventloop_lag_seconds", legend: "{{instance}}" }],
      },
    ],
  },
];
