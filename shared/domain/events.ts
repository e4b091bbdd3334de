import { type Static, type TSchema, Type } from "@sinclair/typebox";
import { ExecutorKindSchema } from "../executor-kinds/index.ts";

/** Version of the event envelope and data shapes; bumped on any breaking change. */
export const EVENT_SCHEMA_VERSION = 1 as const;

const Id = Type.String({ minLength: 1, maxLength: 128 });
const Timestamp = Type.String({ format: "date-time" });

export const JobErrorInfo = Type.Object(
  {
    code: Type.String({ minLength: 1, maxLength: 64 }),
    message: Type.String({ maxLength: 2000 }),
  },
  { additionalProperties: false },
);
export type JobErrorInfo = Static<typeof JobErrorInfo>;

/**
 * Who did something to a job that is not the executor's work: the client that owns it, or an
 * operator (docs/operations.md). Recorded in the event itself, so the audit chain covers it.
 */
export const Actor = Type.Object(
  {
    kind: Type.Union([Type.Literal("client"), Type.Literal("operator")]),
    id: Type.String({ minLength: 1, maxLength: 128 }),
  },
  { additionalProperties: false },
);
export type Actor = Static<typeof Actor>;

export const Principal = Type.Object(
  { id: Type.String(), tenant: Type.String() },
  { additionalProperties: true },
);

export const RunRequestedData = Type.Object(
  {
    request_id: Type.String(),
    route: Type.String(),
    input: Type.String(),
    metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    callback_url: Type.Optional(Type.String()),
    /** SHA-256 of the canonical request body: the same request_id with another body is a conflict. */
    fingerprint: Type.String({ pattern: "^[0-9a-f]{64}$" }),
    /** This run retries that job (same client, route and input); see job.retried. */
    retry_of: Type.Optional(Id),
    /** Who asked for the run when it was not the client itself (an operator's retry). */
    requested_by: Type.Optional(Actor),
  },
  { additionalProperties: false },
);

/**
 * What the completion callback needs of the run, carried by the job's final event so the callback
 * service reads nothing (docs/architecture.md, "The lean event path"). Absent on events written by
 * 0.1 and by writers that do not know the run (then the callback service reads `.run`).
 */
export const RunSummary = Type.Object(
  {
    request_id: Type.String(),
    route: Type.String(),
    /** When the run was accepted (the run.requested time). */
    created_at: Timestamp,
    callback_url: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);
export type RunSummary = Static<typeof RunSummary>;

/** The kind that took the job: one of the shipped executor kinds (shared/executor-kinds). */
const ExecutorTarget = ExecutorKindSchema;

/** The job was handed to an executor that finishes it later (a NATS worker, an HTTP 202). */
export const JobDispatchedData = Type.Object(
  { target: ExecutorTarget, attempt: Type.Integer({ minimum: 1 }) },
  { additionalProperties: false },
);
/** One attempt to hand the job over failed; another follows at `next_attempt_at` unless absent. */
export const JobAttemptFailedData = Type.Object(
  {
    target: ExecutorTarget,
    attempt: Type.Integer({ minimum: 1 }),
    /** Why: `status_5xx`, `status_429`, `timeout`, `network`, … (docs/executors.md). */
    reason: Type.String({ minLength: 1, maxLength: 64 }),
    status_code: Type.Optional(Type.Integer()),
    next_attempt_at: Type.Optional(Timestamp),
  },
  { additionalProperties: false },
);
export const JobRunningData = Type.Object({}, { additionalProperties: false });
/** Fields every final event may carry besides its outcome. */
const FinalExtras = {
  run: Type.Optional(RunSummary),
  /** Attempts the executor needed (HTTP); absent means one, or not counted. */
  attempts: Type.Optional(Type.Integer({ minimum: 1 })),
};
export const JobDoneData = Type.Object(
  { output: Type.Unknown(), ...FinalExtras },
  { additionalProperties: false },
);
export const JobErrorData = Type.Object(
  {
    ...JobErrorInfo.properties,
    ...FinalExtras,
    /** Set on a cancel (code `cancelled`): who cancelled the job. */
    cancelled_by: Type.Optional(Actor),
  },
  { additionalProperties: false },
);
export const JobRejectedData = Type.Object(
  { ...JobErrorInfo.properties, ...FinalExtras },
  { additionalProperties: false },
);

export const CallbackAttemptedData = Type.Object(
  {
    attempt: Type.Integer({ minimum: 1 }),
    status_code: Type.Optional(Type.Integer()),
    duration_ms: Type.Number({ minimum: 0 }),
    error_class: Type.Optional(Type.String()),
    next_attempt_at: Type.Optional(Timestamp),
    /** Stream sequence of the callback.redelivery_requested this attempt serves; absent for the original delivery. */
    redelivery_seq: Type.Optional(Type.Integer({ minimum: 1 })),
  },
  { additionalProperties: false },
);
/**
 * The attempt that settled a callback, recorded in the settling event itself: a delivery on the
 * first try is one `callback.delivered` event, not `callback.attempted` + `callback.delivered`.
 * Absent on 0.1 events, which recorded the attempt separately.
 */
const SettlingAttempt = {
  status_code: Type.Optional(Type.Integer()),
  duration_ms: Type.Optional(Type.Number({ minimum: 0 })),
  error_class: Type.Optional(Type.String()),
  redelivery_seq: Type.Optional(Type.Integer({ minimum: 1 })),
};
export const CallbackDeliveredData = Type.Object(
  { attempts: Type.Integer({ minimum: 1 }), ...SettlingAttempt },
  { additionalProperties: false },
);
export const CallbackFailedData = Type.Object(
  {
    attempts: Type.Integer({ minimum: 0 }),
    reason: Type.Union([Type.Literal("exhausted"), Type.Literal("gone"), Type.Literal("refused")]),
    ...SettlingAttempt,
  },
  { additionalProperties: false },
);

/** An operator asked to send a settled (delivered or failed) callback again. */
export const CallbackRedeliveryRequestedData = Type.Object(
  {
    /** Attempts recorded before this request; a redelivery's attempts continue from here. */
    attempts: Type.Integer({ minimum: 0 }),
    requested_by: Type.Optional(Type.String({ maxLength: 128 })),
  },
  { additionalProperties: false },
);

/**
 * The job was retried: `retry_job_id` is the new job (its run.requested carries `retry_of`). On
 * the old job's `.ops` subject; the retry's request_id is derived from the old job, so there is
 * at most one retry per job (a double click finds the same one).
 */
export const JobRetriedData = Type.Object(
  { retry_job_id: Id, requested_by: Actor },
  { additionalProperties: false },
);

/**
 * An executor's result arrived after the job had been cancelled: kept as history, never applied
 * (the job stays `error` / `cancelled`). On the job's `.ops` subject.
 */
export const JobResultDiscardedData = Type.Object(
  {
    result_type: Type.Union([
      Type.Literal("job.done"),
      Type.Literal("job.error"),
      Type.Literal("job.rejected"),
    ]),
    output: Type.Optional(Type.Unknown()),
    error: Type.Optional(JobErrorInfo),
    reason: Type.Literal("cancelled"),
  },
  { additionalProperties: false },
);

function envelope<K extends string, D extends TSchema>(type: K, data: D) {
  return Type.Object(
    {
      id: Id,
      type: Type.Literal(type),
      schema_version: Type.Literal(EVENT_SCHEMA_VERSION),
      job_id: Id,
      client_id: Id,
      occurred_at: Timestamp,
      data,
    },
    { additionalProperties: false, $id: `switchyard.event.${type}.v${EVENT_SCHEMA_VERSION}` },
  );
}

export const RunRequested = envelope("run.requested", RunRequestedData);
export const JobDispatched = envelope("job.dispatched", JobDispatchedData);
export const JobAttemptFailed = envelope("job.attempt_failed", JobAttemptFailedData);
export const JobRunning = envelope("job.running", JobRunningData);
export const JobDone = envelope("job.done", JobDoneData);
export const JobErrored = envelope("job.error", JobErrorData);
export const JobRejected = envelope("job.rejected", JobRejectedData);
export const CallbackAttempted = envelope("callback.attempted", CallbackAttemptedData);
export const CallbackDelivered = envelope("callback.delivered", CallbackDeliveredData);
export const CallbackFailed = envelope("callback.failed", CallbackFailedData);
export const CallbackRedeliveryRequested = envelope(
  "callback.redelivery_requested",
  CallbackRedeliveryRequestedData,
);
export const JobRetried = envelope("job.retried", JobRetriedData);
export const JobResultDiscarded = envelope("job.result_discarded", JobResultDiscardedData);

/** Every job event schema, keyed by type: the source of schemas/events/*.json. */
export const EVENT_SCHEMAS = {
  "run.requested": RunRequested,
  "job.dispatched": JobDispatched,
  "job.attempt_failed": JobAttemptFailed,
  "job.running": JobRunning,
  "job.done": JobDone,
  "job.error": JobErrored,
  "job.rejected": JobRejected,
  "callback.attempted": CallbackAttempted,
  "callback.delivered": CallbackDelivered,
  "callback.failed": CallbackFailed,
  "callback.redelivery_requested": CallbackRedeliveryRequested,
  "job.retried": JobRetried,
  "job.result_discarded": JobResultDiscarded,
} as const;

export const JobEvent = Type.Union(Object.values(EVENT_SCHEMAS), {
  $id: `switchyard.event.v${EVENT_SCHEMA_VERSION}`,
});

type DeepReadonly<T> = T extends (infer U)[]
  ? readonly DeepReadonly<U>[]
  : T extends object
    ? { readonly [K in keyof T]: DeepReadonly<T[K]> }
    : T;

export type RunRequested = DeepReadonly<Static<typeof RunRequested>>;
export type JobDispatched = DeepReadonly<Static<typeof JobDispatched>>;
export type JobAttemptFailed = DeepReadonly<Static<typeof JobAttemptFailed>>;
export type JobRunning = DeepReadonly<Static<typeof JobRunning>>;
export type JobDone = DeepReadonly<Static<typeof JobDone>>;
export type JobErrored = DeepReadonly<Static<typeof JobErrored>>;
export type JobRejected = DeepReadonly<Static<typeof JobRejected>>;
export type CallbackAttempted = DeepReadonly<Static<typeof CallbackAttempted>>;
export type CallbackDelivered = DeepReadonly<Static<typeof CallbackDelivered>>;
export type CallbackFailed = DeepReadonly<Static<typeof CallbackFailed>>;
export type CallbackRedeliveryRequested = DeepReadonly<Static<typeof CallbackRedeliveryRequested>>;
export type JobRetried = DeepReadonly<Static<typeof JobRetried>>;
export type JobResultDiscarded = DeepReadonly<Static<typeof JobResultDiscarded>>;

/** The job event union: past-tense facts, never commands. */
export type JobEvent =
  | RunRequested
  | JobDispatched
  | JobAttemptFailed
  | JobRunning
  | JobDone
  | JobErrored
  | JobRejected
  | CallbackAttempted
  | CallbackDelivered
  | CallbackFailed
  | CallbackRedeliveryRequested
  | JobRetried
  | JobResultDiscarded;

export type JobEventType = JobEvent["type"];
export type EventOf<T extends JobEventType> = Extract<JobEvent, { type: T }>;
export type EventData<T extends JobEventType> = EventOf<T>["data"];

/** Which per-job subject an event type is appended to (see shared/jobs/subjects.ts). */
export type EventStreamKind = "run" | "job" | "cb" | "ops";

/** Maps an event type to the per-job subject it lives on. */
export function streamKindOf(type: JobEventType): EventStreamKind {
  switch (type) {
    case "run.requested":
      return "run";
    case "job.dispatched":
    case "job.attempt_failed":
    case "job.running":
    case "job.done":
    case "job.error":
    case "job.rejected":
      return "job";
    case "callback.attempted":
    case "callback.delivered":
    case "callback.failed":
    case "callback.redelivery_requested":
      return "cb";
    case "job.retried":
    case "job.result_discarded":
      // Actions on a job that are neither its status nor its callback: only views read them.
      return "ops";
    default: {
      const unreachable: never = type;
      return unreachable;
    }
  }
}
