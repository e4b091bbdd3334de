import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { appendEvent } from "../bus/append.ts";
import { readLastEvent, type StoredEvent } from "../bus/read.ts";
import type { Clock } from "../clock/index.ts";
import type { JobEvent, JobStatus } from "../domain/index.ts";
import type { IdGenerator } from "../ids/index.ts";

/** The status events a job's `.job` subject holds. */
export type StatusEvent = Extract<
  JobEvent,
  { type: "job.dispatched" | "job.running" | "job.done" | "job.error" | "job.rejected" }
>;
export type StatusEventType = StatusEvent["type"];

/** Which job: the pair that names its subjects. */
export interface JobRef {
  readonly client_id: string;
  readonly job_id: string;
}

/** A job's status as its `.job` subject says, and the sequence a writer must expect. */
export interface CurrentStatus {
  readonly status: JobStatus;
  readonly last: StoredEvent | null;
  /** Expected last subject sequence for the next append (0: nothing appended yet). */
  readonly seq: number;
}

const STATUS_OF: Record<StatusEventType, JobStatus> = {
  "job.dispatched": "dispatched",
  "job.running": "running",
  "job.done": "done",
  "job.error": "error",
  "job.rejected": "rejected",
};

/** The status an event type moves a job to. */
export function statusOf(type: StatusEventType): JobStatus {
  return STATUS_OF[type];
}

function isStatusEvent(event: JobEvent): event is StatusEvent {
  return event.type in STATUS_OF;
}

/**
 * Reads the job's status from the last event of its `.job` subject (from the stream leader).
 * Every status event is appended with optimistic concurrency, so the last one is always a legal
 * move and names the current status; an empty subject means `queued`.
 */
export async function readStatus(jsm: JetStreamManager, ref: JobRef): Promise<CurrentStatus> {
  const last = await readLastEvent(jsm, ref.client_id, ref.job_id, "job");
  if (last === null || !isStatusEvent(last.event)) {
    return { status: "queued", last, seq: last?.seq ?? 0 };
  }
  return { status: statusOf(last.event.type), last, seq: last.seq };
}

export interface StatusWriterDeps {
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly clock: Clock;
  readonly ids: IdGenerator;
}

/** A status event to append, before the envelope is added. */
export type StatusIntent = {
  [T in StatusEventType]: {
    readonly type: T;
    readonly data: Extract<StatusEvent, { type: T }>["data"];
  };
}[StatusEventType];

/** What writeStatus did. */
export type WriteResult =
  | { readonly kind: "appended"; readonly seq: number; readonly event: StatusEvent }
  | { readonly kind: "skipped"; readonly current: CurrentStatus };

/** Builds the full event for an intent. */
export function buildStatusEvent(
  deps: Pick<StatusWriterDeps, "clock" | "ids">,
  ref: JobRef,
  intent: StatusIntent,
): StatusEvent {
  return {
    id: deps.ids.next("evt"),
    type: intent.type,
    schema_version: 1,
    job_id: ref.job_id,
    client_id: ref.client_id,
    occurred_at: deps.clock.now().toISOString(),
    data: intent.data,
  } as StatusEvent;
}

const MAX_ROUNDS = 8;

/**
 * Read, decide, append: the one way status events are written (executor, dispatcher, watchdog,
 * executor reports, NATS workers). `decide` sees the current status and returns the event to
 * append, or undefined to stop. The append expects the sequence that was read; when another
 * writer got in between, the subject is read again and `decide` runs again, so two writers can
 * never both finish a job. `known` skips the first read when the caller has just read or written.
 */
export async function writeStatus(
  deps: StatusWriterDeps,
  ref: JobRef,
  decide: (current: CurrentStatus) => StatusIntent | undefined,
  options: { readonly known?: CurrentStatus; readonly traceparent?: string } = {},
): Promise<WriteResult> {
  let current = options.known ?? (await readStatus(deps.jsm, ref));
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const intent = decide(current);
    if (intent === undefined) return { kind: "skipped", current };
    const event = buildStatusEvent(deps, ref, intent);
    const result = await appendEvent(deps.js, event, {
      expectedLastSubjectSeq: current.seq,
      ...(options.traceparent ? { traceparent: options.traceparent } : {}),
    });
    if (result.kind !== "conflict") return { kind: "appended", seq: result.seq, event };
    current = await readStatus(deps.jsm, ref);
  }
  throw new Error(`job ${ref.job_id}: status write kept conflicting`);
}

/** The status a successful write left the job in. */
export function statusAfter(result: WriteResult): CurrentStatus {
  return result.kind === "appended"
    ? {
        status: statusOf(result.event.type),
        last: { seq: result.seq, event: result.event },
        seq: result.seq,
      }
    : result.current;
}
