import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { stringify } from "yaml";

export const PROMTOOL_INSTALL_HINT =
  "promtool not found. Debian's prometheus package provides it: `apt-get install -y prometheus` " +
  "(.ci/run installs it), or set SWITCHYARD_PROMTOOL=/path/to/promtool.";

/** promtool from $SWITCHYARD_PROMTOOL or PATH; throws with the install hint when there is none. */
export function findPromtool(): string {
  const explicit = process.env.SWITCHYARD_PROMTOOL;
  if (explicit) return explicit;
  for (const dir of (process.env.PATH ?? "").split(delimiter).filter(Boolean)) {
    const candidate = join(dir, "promtool");
    if (existsSync(candidate)) return candidate;
  }
  if (existsSync("/usr/bin/promtool")) return "/usr/bin/promtool";
  throw new Error(PROMTOOL_INSTALL_HINT);
}

/** Runs promtool with files written to a temporary directory; returns exit code and output. */
export function promtool(
  args: (dir: string) => string[],
  files: Record<string, string>,
): { code: number; output: string } {
  const dir = mkdtempSync(join(tmpdir(), "sy-promtool-"));
  try {
    for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content);
    const run = Bun.spawnSync([findPromtool(), ...args(dir)], { stdout: "pipe", stderr: "pipe" });
    return { code: run.exitCode, output: `${run.stdout.toString()}${run.stderr.toString()}` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Expressions as recording rules, so `promtool check rules` parses each one. */
export function asRecordingRules(exprs: readonly string[]): string {
  return stringify({
    groups: [
      {
        name: "parse-check",
        rules: exprs.map((expr, i) => ({ record: `parse_check:expr_${i}`, expr })),
      },
    ],
  });
}

/** A Grafana query with its template variables replaced, so Prometheus can parse it. */
export function substituteGrafanaVariables(expr: string): string {
  return expr
    .replaceAll("$__rate_interval", "5m")
    .replaceAll("$__interval", "1m")
    .replaceAll("$__range", "6h")
    .replaceAll("$route", ".*");
}

/** A metric selector in an expression: the name and the label names its matchers use. */
export interface Selector {
  readonly metric: string;
  readonly labels: readonly string[];
}

const MATCHER = /([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)\s*"/g;
const METRIC_PREFIXES = /\b((?:switchyard|jetstream|gnatsd)_[a-z0-9_]+)\b/g;

/** Every selector `name{…}` and every prefixed metric name used bare, with matcher labels. */
export function selectorsOf(expr: string): Selector[] {
  const out: Selector[] = [];
  const braced = /([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}/g;
  for (const [, metric, matchers] of expr.matchAll(braced)) {
    const labels = [...(matchers ?? "").matchAll(MATCHER)].map((m) => m[1] as string);
    out.push({ metric: metric as string, labels });
  }
  const withoutBraces = expr.replace(braced, " ");
  for (const [, metric] of withoutBraces.matchAll(METRIC_PREFIXES)) {
    out.push({ metric: metric as string, labels: [] });
  }
  return out;
}

/** Label names of `by (…)` and `without (…)` clauses. */
export function groupingLabelsOf(expr: string): string[] {
  return [...expr.matchAll(/\b(?:by|without)\s*\(([^)]*)\)/g)].flatMap((m) =>
    (m[1] ?? "")
      .split(",")
      .map((l) => l.trim())
      .filter(Boolean),
  );
}

/** `{{label}}` of a legend and `{{ $labels.label }}` of an annotation (not `{{ $value }}`). */
export function legendLabelsOf(legend: string): string[] {
  return [...legend.matchAll(/\{\{\s*(?:\$labels\.)?([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}/g)].map(
    (m) => m[1] as string,
  );
}

/**
 * The prometheus-nats-exporter's JetStream series (collector/jsz.go, default "jetstream"
 * namespace, run with -jsz=all) and their labels.
 */
const SERVER_LABELS = [
  "server_id",
  "server_name",
  "cluster",
  "domain",
  "meta_leader",
  "is_meta_leader",
];
const STREAM_LABELS = [
  ...SERVER_LABELS,
  "account",
  "account_id",
  "stream_name",
  "stream_leader",
  "is_stream_leader",
];
const CONSUMER_LABELS = [
  ...STREAM_LABELS,
  "consumer_name",
  "consumer_leader",
  "is_consumer_leader",
  "consumer_desc",
  "consumer_created",
];
export const NATS_EXPORTER_METRICS: Readonly<Record<string, readonly string[]>> = {
  jetstream_server_total_streams: SERVER_LABELS,
  jetstream_server_total_consumers: SERVER_LABELS,
  jetstream_server_total_messages: SERVER_LABELS,
  jetstream_server_total_message_bytes: SERVER_LABELS,
  jetstream_server_max_memory: SERVER_LABELS,
  jetstream_server_max_storage: SERVER_LABELS,
  jetstream_stream_total_messages: STREAM_LABELS,
  jetstream_stream_total_bytes: STREAM_LABELS,
  jetstream_stream_first_seq: STREAM_LABELS,
  jetstream_stream_last_seq: STREAM_LABELS,
  jetstream_stream_consumer_count: STREAM_LABELS,
  jetstream_consumer_num_pending: CONSUMER_LABELS,
  jetstream_consumer_num_ack_pending: CONSUMER_LABELS,
  jetstream_consumer_num_redelivered: CONSUMER_LABELS,
};

/** Labels Prometheus adds to every scraped series (the target's). */
export const TARGET_LABELS = ["instance", "job"];
