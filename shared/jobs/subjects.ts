import { EVENT_SUBJECT_ROOT } from "../bus/subjects.ts";
import type { EventStreamKind } from "../domain/index.ts";

/**
 * The per-job subject an event is appended to. One subject per (job, kind) gives each job its own
 * ordered event streams, so writers can append with an expected last subject sequence:
 * `.run` holds exactly one run.requested (the idempotency guard, expected 0), `.job` the status
 * events (optimistic concurrency between executor, reports and the watchdog), `.cb` callbacks.
 */
export function jobSubject(clientId: string, jobId: string, kind: EventStreamKind): string {
  return `${EVENT_SUBJECT_ROOT}.${clientId}.${jobId}.${kind}`;
}

/** Filters for reading the stream by job, by client, or one kind across all jobs. */
export const subjectFilters = {
  all: `${EVENT_SUBJECT_ROOT}.>`,
  job: (clientId: string, jobId: string) => `${EVENT_SUBJECT_ROOT}.${clientId}.${jobId}.*`,
  anyClientJob: (jobId: string) => `${EVENT_SUBJECT_ROOT}.*.${jobId}.*`,
  client: (clientId: string) => `${EVENT_SUBJECT_ROOT}.${clientId}.>`,
  kind: (kind: EventStreamKind) => `${EVENT_SUBJECT_ROOT}.*.*.${kind}`,
} as const;

/** The job view's KV key: scoped by client so one client can never read another's job. */
export function jobViewKey(clientId: string, jobId: string): string {
  return `${clientId}.${jobId}`;
}
