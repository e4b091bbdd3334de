import type { JobCompletedEvent } from "../shared/webhooks/index.ts";

export type { JobCompletedEvent };

/** Job statuses. done, error and rejected are final. */
export type JobStatus = "queued" | "dispatched" | "running" | "done" | "error" | "rejected";

export const FINAL_STATUSES: ReadonlySet<JobStatus> = new Set(["done", "error", "rejected"]);

/** True for done, error and rejected. */
export function isFinalStatus(status: JobStatus): boolean {
  return FINAL_STATUSES.has(status);
}

/** Body of POST /run. Unknown top-level fields are rejected by the service. */
export interface RunRequest {
  /** Idempotency key within your client. Reuse it for every retry of the same work. */
  request_id: string;
  route: string;
  /** Untrusted task text; never an authorization source. */
  input: string;
  metadata?: Record<string, unknown>;
  callback_url?: string;
}

/** 202 answer to a new run. */
export interface RunAccepted {
  job_id: string;
  status: "queued";
  request_id: string;
  route: string;
  created_at: string;
}

/** Delivery state of the completion callback, when one was requested. */
export interface CallbackState {
  status: string;
  attempts: number;
  last_attempt_at?: string;
  next_attempt_at?: string;
}

/** GET /jobs/{job_id} record. */
export interface Job {
  job_id: string;
  request_id: string;
  route: string;
  status: JobStatus;
  created_at: string;
  updated_at: string;
  output?: unknown;
  error?: { code: string; message: string };
  callback?: CallbackState;
}

/**
 * Result of {@link SwitchyardClient.run}: `created` is true for a new job (202), false when the
 * service recognised the request_id and returned the existing job (200).
 */
export type RunResult =
  | { created: true; job: RunAccepted; location?: string }
  | { created: false; job: Job };

/** One field-level problem in an RFC 9457 error. */
export interface ProblemFieldError {
  pointer: string;
  message: string;
}

/** RFC 9457 problem body as sent by the service. */
export interface ProblemDetails {
  type: string;
  title: string;
  status: number;
  detail?: string;
  code: string;
  errors?: ProblemFieldError[];
}
