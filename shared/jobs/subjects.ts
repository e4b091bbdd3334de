import { EVENT_SUBJECT_ROOT } from "../bus/index.ts";
import type { EventStreamKind } from "../domain/index.ts";

/**
 * Which job: the pair that names its subjects and its view. Every function of the job stream
 * takes one, so where a job's events live is derived here and nowhere else. An event is a JobRef
 * (it carries both ids), so appends and projections pass it as is.
 */
export interface JobRef {
  readonly client_id: string;
  readonly job_id: string;
}

/**
 * The per-job subject an event is appended to. One subject per (job, kind) gives each job its own
 * ordered event streams, so writers can append with an expected last subject sequence:
 * `.run` holds exactly one run.requested (the idempotency guard, expected 0), `.job` the status
 * events (optimistic concurrency between executor, reports and the watchdog), `.cb` callbacks.
 */
export function jobSubject(ref: JobRef, kind: EventStreamKind): string {
  return `${EVENT_SUBJECT_ROOT}.${ref.client_id}.${ref.job_id}.${kind}`;
}

/** Filters for reading the stream by job, by client, or one kind across all jobs. */
export const subjectFilters = {
  all: `${EVENT_SUBJECT_ROOT}.>`,
  job: (ref: JobRef) => `${EVENT_SUBJECT_ROOT}.${ref.client_id}.${ref.job_id}.*`,
  anyClientJob: (jobId: string) => `${EVENT_SUBJECT_ROOT}.*.${jobId}.*`,
  /** The run.requested of a job whose client is not known yet. */
  anyClientRun: (jobId: string) => `${EVENT_SUBJECT_ROOT}.*.${jobId}.run`,
  client: (clientId: string) => `${EVENT_SUBJECT_ROOT}.${clientId}.>`,
  kind: (kind: EventStreamKind) => `${EVENT_SUBJECT_ROOT}.*.*.${kind}`,
} as const;

/** The job an event subject belongs to; undefined for a subject that is not a job's. */
export function jobRefOfSubject(subject: string): JobRef | undefined {
  const [root, evt, client_id, job_id] = subject.split(".");
  if (`${root}.${evt}` !== EVENT_SUBJECT_ROOT || client_id === undefined || job_id === undefined) {
    return undefined;
  }
  return { client_id, job_id };
}

/** The job view's KV key: scoped by client so one client can never read another's job. */
export function jobViewKey(ref: JobRef): string {
  return `${ref.client_id}.${ref.job_id}`;
}
