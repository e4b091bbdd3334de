import { stringify } from "yaml";

/**
 * Unit tests for the alert rules, as `promtool test rules` runs them: input series, a time, and
 * the alerts expected then (labels only; an empty list: the alert must not fire).
 */
export interface AlertScenario {
  readonly title: string;
  readonly series: Readonly<Record<string, string>>;
  readonly evalTime: string;
  readonly alert: string;
  readonly expect: readonly Readonly<Record<string, string>>[];
}

const EVENTS = 'stream="SWITCHYARD_EVENTS"';
const lag = (value: string) => ({ 'switchyard_projector_lag_seconds{instance="a"}': value });
const attempts = (delivered: string, retry: string) => ({
  'switchyard_callback_attempts_total{outcome="delivered",instance="a"}': delivered,
  'switchyard_callback_attempts_total{outcome="retry",instance="a"}': retry,
});
const streams = {
  'switchyard_stream_bytes{stream="SWITCHYARD_EVENTS",instance="a"}': "850x10",
  'switchyard_stream_bytes{stream="SWITCHYARD_EVENTS",instance="b"}': "850x10",
  'switchyard_stream_limit_bytes{stream="SWITCHYARD_EVENTS",instance="a"}': "1000x10",
  'switchyard_stream_limit_bytes{stream="SWITCHYARD_EVENTS",instance="b"}': "1000x10",
  // No limit: never "near" it, however large.
  'switchyard_stream_bytes{stream="KV_sy_jobs",instance="a"}': "999999x10",
};

export const ALERT_SCENARIOS: readonly AlertScenario[] = [
  {
    title:
      "a growing events backlog alerts once (two processes report it); a large flat one does not",
    series: {
      [`switchyard_consumer_pending{${EVENTS},consumer="executor",instance="a"}`]: "0+200x40",
      [`switchyard_consumer_pending{${EVENTS},consumer="executor",instance="b"}`]: "0+200x40",
      [`switchyard_consumer_pending{${EVENTS},consumer="projector",instance="a"}`]: "5000x40",
    },
    evalTime: "30m",
    alert: "SwitchyardBacklogGrowing",
    expect: [{ severity: "warning", stream: "SWITCHYARD_EVENTS", consumer: "executor" }],
  },
  {
    title: "a growing task queue alerts; deadline timers waiting for their time do not",
    series: {
      'switchyard_consumer_pending{stream="SWITCHYARD_TASKS",consumer="task_x",instance="a"}':
        "0+50x90",
      'switchyard_consumer_pending{stream="SWITCHYARD_DEADLINES",consumer="deadline_60000",instance="a"}':
        "0+50x90",
    },
    evalTime: "80m",
    alert: "SwitchyardWorkQueueGrowing",
    expect: [{ severity: "warning", stream: "SWITCHYARD_TASKS", consumer: "task_x" }],
  },
  {
    title: "projector 45 s behind: lagging",
    series: lag("45x20"),
    evalTime: "10m",
    alert: "SwitchyardProjectorLagging",
    expect: [{ severity: "warning" }],
  },
  {
    title: "projector 45 s behind: not stalled",
    series: lag("45x20"),
    evalTime: "10m",
    alert: "SwitchyardProjectorStalled",
    expect: [],
  },
  {
    title: "projector 400 s behind: stalled",
    series: lag("400x20"),
    evalTime: "10m",
    alert: "SwitchyardProjectorStalled",
    expect: [{ severity: "critical" }],
  },
  {
    title: "a third of callback attempts failing",
    series: attempts("0+10x40", "0+5x40"),
    evalTime: "35m",
    alert: "SwitchyardCallbackFailureRate",
    expect: [{ severity: "warning" }],
  },
  {
    title: "one in eleven callback attempts failing is below the threshold",
    series: attempts("0+10x40", "0+1x40"),
    evalTime: "35m",
    alert: "SwitchyardCallbackFailureRate",
    expect: [],
  },
  {
    title: "a callback given up",
    series: {
      'switchyard_callback_completion_seconds_count{route="r.one",outcome="failed",instance="a"}':
        "0 0 1 1 1",
    },
    evalTime: "3m",
    alert: "SwitchyardCallbacksGivenUp",
    expect: [{ severity: "info", route: "r.one" }],
  },
  {
    title: "the events stream at 85% of max_bytes",
    series: streams,
    evalTime: "6m",
    alert: "SwitchyardStreamNearLimit",
    expect: [{ severity: "warning", stream: "SWITCHYARD_EVENTS" }],
  },
  {
    title: "85% is not at the limit",
    series: streams,
    evalTime: "6m",
    alert: "SwitchyardStreamAtLimit",
    expect: [],
  },
  {
    title: "the events stream at 97% of max_bytes",
    series: {
      'switchyard_stream_bytes{stream="SWITCHYARD_EVENTS",instance="a"}': "970x10",
      'switchyard_stream_limit_bytes{stream="SWITCHYARD_EVENTS",instance="a"}': "1000x10",
    },
    evalTime: "3m",
    alert: "SwitchyardStreamAtLimit",
    expect: [{ severity: "critical", stream: "SWITCHYARD_EVENTS" }],
  },
  {
    title: "a NATS server at 90% of its JetStream storage (prometheus-nats-exporter)",
    series: {
      'jetstream_server_total_message_bytes{server_name="nats-0",server_id="X"}': "900x15",
      'jetstream_server_max_storage{server_name="nats-0",server_id="X"}': "1000x15",
      'jetstream_server_total_message_bytes{server_name="nats-1",server_id="Y"}': "100x15",
      'jetstream_server_max_storage{server_name="nats-1",server_id="Y"}': "1000x15",
    },
    evalTime: "11m",
    alert: "NatsJetStreamStorageNearLimit",
    expect: [{ severity: "warning", server_name: "nats-0" }],
  },
  {
    title: "no process runs the callback service",
    series: {
      'switchyard_service_info{service="ingress",instance="a"}': "1x10",
      'switchyard_service_info{service="projector",instance="b"}': "1x10",
      'switchyard_service_info{service="indexer",instance="b"}': "1x10",
      'switchyard_service_info{service="executor",instance="c"}': "1x10",
    },
    evalTime: "6m",
    alert: "SwitchyardServiceMissing",
    expect: [{ severity: "critical", service: "callback" }],
  },
  {
    title: "one target down",
    series: {
      'up{app_kubernetes_io_part_of="switchyard",instance="10.0.0.1:9090"}': "0x5",
      'up{app_kubernetes_io_part_of="switchyard",instance="10.0.0.2:9090"}': "1x5",
    },
    evalTime: "3m",
    alert: "SwitchyardTargetDown",
    expect: [
      { severity: "critical", app_kubernetes_io_part_of: "switchyard", instance: "10.0.0.1:9090" },
    ],
  },
];

/** The promtool test file for every scenario, loading `rulesFile` (relative to it). */
export function alertTestFile(rulesFile: string): string {
  return stringify({
    rule_files: [rulesFile],
    evaluation_interval: "1m",
    tests: ALERT_SCENARIOS.map((s) => ({
      name: s.title,
      interval: "1m",
      input_series: Object.entries(s.series).map(([series, values]) => ({ series, values })),
      alert_rule_test: [
        {
          eval_time: s.evalTime,
          alertname: s.alert,
          exp_alerts: s.expect.map((labels) => ({ exp_labels: labels })),
        },
      ],
    })),
  });
}
