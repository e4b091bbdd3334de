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
