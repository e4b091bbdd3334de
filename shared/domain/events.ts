import { type Static, type TSchema, Type } from "@sinclair/typebox";

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
  },
  { additionalProperties: false },
);

export const JobDispatchedData = Type.Object(
  {
    target: Type.Union([Type.Literal("builtin"), Type.Literal("http"), Type.Literal("nats")]),
    attempt: Type.Integer({ minimum: 1 }),
  },
  { additionalProperties: false },
);
export const JobRunningData = Type.Object({}, { additionalProperties: false });
export const JobDoneData = Type.Object({ output: Type.Unknown() }, { additionalProperties: false });
export const JobErrorData = JobErrorInfo;
export const JobRejectedData = JobErrorInfo;

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
export const CallbackDeliveredData = Type.Object(
  { attempts: Type.Integer({ minimum: 1 }) },
  { additionalProperties: false },
);
export const CallbackFailedData = Type.Object(
  {
    attempts: Type.Integer({ minimum: 0 }),
    reason: Type.Union([Type.Literal("exhausted"), Type.Literal("gone"), Type.Literal("refused")]),
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

/** Every job event schema, keyed by type: the source of schemas/events/*.json. */
export const EVENT_SCHEMAS = {
  "run.requested": RunRequested,
  "job.dispatched": JobDispatched,
  "job.running": JobRunning,
  "job.done": JobDone,
  "job.error": JobErrored,
  "job.rejected": JobRejected,
  "callback.attempted": CallbackAttempted,
  "callback.delivered": CallbackDelivered,
  "callback.failed": CallbackFailed,
  "callback.redelivery_requested": CallbackRedeliveryRequested,
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
export type JobRunning = DeepReadonly<Static<typeof JobRunning>>;
export type JobDone = DeepReadonly<Static<typeof JobDone>>;
export type JobErrored = DeepReadonly<Static<typeof JobErrored>>;
export type JobRejected = DeepReadonly<Static<typeof JobRejected>>;
export type CallbackAttempted = DeepReadonly<Static<typeof CallbackAttempted>>;
export type CallbackDelivered = DeepReadonly<Static<typeof CallbackDelivered>>;
export type CallbackFailed = DeepReadonly<Static<typeof CallbackFailed>>;
export type CallbackRedeliveryRequested = DeepReadonly<Static<typeof CallbackRedeliveryRequested>>;

/** The job event union: past-tense facts, never commands. */
export type JobEvent =
  | RunRequested
  | JobDispatched
  | JobRunning
  | JobDone
  | JobErrored
  | JobRejected
  | CallbackAttempted
  | CallbackDelivered
  | CallbackFailed
  | CallbackRedeliveryRequested;

export type JobEventType = JobEvent["type"];
export type EventOf<T extends JobEventType> = Extract<JobEvent, { type: T }>;
export type EventData<T extends JobEventType> = EventOf<T>["data"];

/** Which per-job subject an event type is appended to (see shared/bus/subjects.ts). */
export type EventStreamKind = "run" | "job" | "cb";

/** Maps an event type to the per-job subject it lives on. */
export function streamKindOf(type: JobEventType): EventStreamKind {
  switch (type) {
    case "run.requested":
      return "run";
    case "job.dispatched":
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
    default: {
      const unreachable: never = type;
      return unreachable;
    }
  }
}
