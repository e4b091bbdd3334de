/**
 * Option specs of the commands, in a module without imports, so `--help` and argument errors are
 * answered without loading the services.
 */

/** `switchyard events` */
export const EVENTS_OPTIONS = {
  job: { type: "string" },
  client: { type: "string" },
  type: { type: "string" },
  since: { type: "string" },
  until: { type: "string" },
  "from-seq": { type: "string" },
  limit: { type: "string" },
  /** One partition's stream (a hub of several partitions). */
  partition: { type: "string" },
  follow: { type: "boolean", default: false },
  pretty: { type: "boolean", default: false },
} as const;

export const EVENTS_USAGE = `usage: switchyard events [options]

  the event stream as NDJSON, one {"seq", "subject", "time", "event"} per line (or a table), then stop
  --job <job_id>         one job's events (job_…)
  --client <client_id>   one client's events
  --type <event type>    one type, e.g. run.requested, job.done, job.error, callback.delivered
  --since <time>         events that occurred at or after an RFC 3339 time, e.g. 2026-11-01T00:00:00Z
  --until <time>         events that occurred at or before an RFC 3339 time
  --from-seq <n>         start at stream sequence n (resume an export: the last line's seq + 1)
  --partition <p>        one partition's stream (a hub of several partitions; default: all, by time)
  --limit <n>            stop after n events
  --follow               keep printing new events until Ctrl-C
  --pretty               a table for people instead of NDJSON (a run's input is left out)`;

/** `switchyard audit verify` */
export const AUDIT_VERIFY_OPTIONS = {
  "public-key": { type: "string" },
  file: { type: "string" },
  "nats-url": { type: "string" },
  /** Only this partition (default: every partition). */
  partition: { type: "string" },
} as const;

/** The services `switchyard serve` runs (services/runtime/run.ts SERVICE_NAMES). */
export const SERVICE_NAMES = ["ingress", "projector", "indexer", "executor", "callback"] as const;

export const SERVE_USAGE = `usage: switchyard serve <service> [<service>...]

  the named services in one process over one NATS connection (needs a config file, SWITCHYARD_CONFIG)
  services: ${SERVICE_NAMES.join(", ")}
  Kubernetes runs the ingress, the executor and the callback service alone, and the two read
  models together: \`serve projector indexer\` (the read-models NATS user), so each event of a
  partition is delivered once for both. \`serve projector\` and \`serve indexer\` run them apart.`;

/**
 * What is wrong with the services `serve` was given: a name that is no service, or one named
 * twice (the process would start it once and the log would say otherwise). Undefined when right.
 */
export function serveProblem(names: readonly string[]): string | undefined {
  const known: readonly string[] = SERVICE_NAMES;
  const unknown = names.find((name) => !known.includes(name));
  if (unknown !== undefined) {
    return `unknown service '${unknown}'; serve takes: ${SERVICE_NAMES.join(", ")}`;
  }
  const twice = names.find((name, i) => names.indexOf(name) !== i);
  return twice === undefined ? undefined : `service '${twice}' is named twice`;
}

/** `switchyard permissions` */
export const PERMISSIONS_OPTIONS = {
  /** The hub's nats.partitions (default: the config file's, else 1). */
  partitions: { type: "string" },
  /** Write the file here instead of stdout. */
  out: { type: "string" },
} as const;

export const PERMISSIONS_USAGE = `usage: switchyard permissions [--partitions <P>] [--out <file>]

  prints the NATS users and permissions (permissions.conf: one user per role, least privilege) for
  a hub of P partitions; deploy/nats/permissions.conf is its output for P = 1
  --partitions <P>   the hub's nats.partitions, 1 to 256 (default: nats.partitions of the config
                     file, SWITCHYARD_CONFIG or ./switchyard.yaml; 1 without a config file)
  --out <file>       write the file there instead of stdout`;
