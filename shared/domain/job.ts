import type { JobErrorInfo } from "./events.ts";

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

export type CallbackStatus = "pending" | "delivered" | "failed";

export interface CallbackView {
  readonly status: CallbackStatus;
  readonly attempts: number;
  readonly last_attempt_at?: string;
  readonly next_attempt_at?: string;
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
  readonly error?: JobErrorInfo;
  readonly callback?: CallbackView;
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
