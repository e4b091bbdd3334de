import type { Actor, JobErrorInfo, JobEvent, JobEventType } from "./events.ts";

/** The spec's job statuses (section 3). */
export const JOB_STATUSES = [
  "queued",
  "dispatched",
  "running",
  "done",
  "error",
  "rejected",
] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

export const FINAL_STATUSES: ReadonlySet<JobStatus> = new Set(["done", "error", "rejected"]);

/** True for done, error and rejected: nothing moves a job out of these. */
export function isFinal(status: JobStatus): boolean {
  return FINAL_STATUSES.has(status);
}

/** The events on a job's `.job` subject: each one moves (or tries to move) the status. */
export type StatusEvent = Extract<
  JobEvent,
  {
    type:
      | "job.dispatched"
      | "job.attempt_failed"
      | "job.running"
      | "job.done"
      | "job.error"
      | "job.rejected";
  }
>;
export type StatusEventType = StatusEvent["type"];
/** The three events that end a job. */
export type FinalEventType = "job.done" | "job.error" | "job.rejected";
export type FinalEvent = Extract<StatusEvent, { type: FinalEventType }>;

const STATUS_AFTER: Readonly<Record<StatusEventType, JobStatus>> = {
  "job.dispatched": "dispatched",
  "job.attempt_failed": "dispatched",
  "job.running": "running",
  "job.done": "done",
  "job.error": "error",
  "job.rejected": "rejected",
};

/** The status a status event moves a job to. */
export function statusAfter(type: StatusEventType): JobStatus {
  return STATUS_AFTER[type];
}

/** True for the status events (the `.job` subject's events). */
export function isStatusEventType(type: string): type is StatusEventType {
  return type in STATUS_AFTER;
}

/** True for job.done, job.error and job.rejected: the events that end a job. */
export function isFinalEventType(type: string): type is FinalEventType {
  return type === "job.done" || type === "job.error" || type === "job.rejected";
}

/** True when the event ends a job. */
export function isFinalEvent(event: JobEvent): event is FinalEvent {
  return isFinalEventType(event.type as JobEventType);
}

export type CallbackStatus = "pending" | "delivered" | "failed";

export interface CallbackView {
  readonly status: CallbackStatus;
  readonly attempts: number;
  readonly last_attempt_at?: string;
  readonly next_attempt_at?: string;
}

/** A job's error: code and message, and for a cancel (code `cancelled`) who cancelled it. */
export interface JobViewError extends JobErrorInfo {
  readonly cancelled_by?: Actor;
}

/**
 * The job as the projector stores it and GET /jobs serves it (minus the internal fields
 * `client_id`, `fingerprint` and `seq`, see toJobResource).
 */
export interface JobView {
  readonly job_id: string;
  readonly client_id: string;
  readonly request_id: string;
  readonly route: string;
  readonly status: JobStatus;
  readonly created_at: string;
  readonly updated_at: string;
  readonly completed_at?: string;
  readonly output?: unknown;
  readonly error?: JobViewError;
  readonly callback?: CallbackView;
  /** This job retries that one (an operator's retry). */
  readonly retry_of?: string;
  /** This job was retried as that one. */
  readonly retried_as?: string;
  readonly fingerprint: string;
  /** Stream sequence of the last event applied; makes projection idempotent under redelivery. */
  readonly seq: number;
}

/** The public job record of GET /jobs/{job_id} and of a replayed POST /run. */
export type JobResource = Omit<JobView, "client_id" | "fingerprint" | "seq">;

/** Strips the internal fields of a view. */
export function toJobResource(view: JobView): JobResource {
  const { client_id: _c, fingerprint: _f, seq: _s, ...resource } = view;
  return resource;
}
