/** Job statuses (spec section 3). done, error and rejected are final. */
export type JobStatus = "queued" | "dispatched" | "running" | "done" | "error" | "rejected";

/** The statuses nothing moves a job out of. */
export type FinalJobStatus = "done" | "error" | "rejected";

export const FINAL_STATUSES: ReadonlySet<JobStatus> = new Set<JobStatus>([
  "done",
  "error",
  "rejected",
]);

/** True for done, error and rejected. */
export function isFinalStatus(status: JobStatus): status is FinalJobStatus {
  return FINAL_STATUSES.has(status);
}

/** Body of POST /run. Unknown top-level fields are refused by the hub (400 invalid_request). */
export interface RunRequest {
  /** Idempotency key within your client. Reuse it for every retry of the same work. */
  request_id: string;
  /** Route key; must be configured on the hub and allowed for your client. */
  route: string;
  /** Untrusted task text; never an authorization source. */
  input: string;
  /** Business context; `principal` (when present) needs non-empty `id` and `tenant`. */
  metadata?: Record<string, unknown>;
  /** Absolute http(s) URL that receives the signed completion callback. */
  callback_url?: string;
}

/** A job's error, present when the status is error or rejected. */
export interface JobError {
  /** Stable code, e.g. "executor_unavailable", "deadline_exceeded", "cancelled". */
  code: string;
  message: string;
  /** Who cancelled the job, when `code` is "cancelled". */
  cancelled_by?: { kind: "client" | "operator"; id: string };
}

/** Delivery state of the completion callback, present when the run had a callback_url. */
export interface CallbackState {
  status: "pending" | "delivered" | "failed";
  attempts: number;
  last_attempt_at?: string;
  next_attempt_at?: string;
}

/**
 * The job record: the body of GET /jobs/{job_id}, of both answers to POST /run, of every item of
 * GET /jobs and of the cancel answers. The hub may add members; ignore the ones you do not know.
 */
export interface Job {
  job_id: string;
  request_id: string;
  route: string;
  status: JobStatus;
  /** RFC 3339 times. */
  created_at: string;
  updated_at: string;
  /** Set once the job is final. */
  completed_at?: string;
  /** Executor result; present when done. */
  output?: unknown;
  error?: JobError;
  callback?: CallbackState;
  /** This job retries that one (an operator's retry). */
  retry_of?: string;
  /** This job was retried as that one. */
  retried_as?: string;
}

/**
 * Result of `run()`: `created` is true for a new job (202) and false when the hub already knew the
 * request_id and answered with that job's current record (200).
 */
export interface RunResult {
  created: boolean;
  job: Job;
  /** The job's path, `/jobs/{job_id}`, from the Location header. */
  location: string | undefined;
}

/** Filters of GET /jobs. Every member is optional; `status` and `route` may list several values. */
export interface ListJobsParams {
  status?: JobStatus | readonly JobStatus[];
  route?: string | readonly string[];
  /** Jobs created at or after this time (a Date or an RFC 3339 string). */
  createdAfter?: Date | string;
  /** Jobs created before this time (a Date or an RFC 3339 string). */
  createdBefore?: Date | string;
  /** Page size, 1 to 500; the hub's default is 50. */
  limit?: number;
  /** `nextCursor` of the previous page. */
  cursor?: string;
}

/** One page of GET /jobs, newest first. */
export interface JobPage {
  jobs: Job[];
  /** Pass it as `cursor` to read the next page; null on the last page. */
  nextCursor: string | null;
}

/**
 * Result of `cancelJob()`: `cancelling` (202) while the hub carries the cancel out, `cancelled`
 * (200) when the job had already been cancelled. A cancelled job ends as status `error` with
 * error code `cancelled`.
 */
export interface CancelResult {
  state: "cancelling" | "cancelled";
  job: Job;
}

/** One field-level problem in an RFC 9457 answer: an RFC 6901 pointer into the request. */
export interface ProblemFieldError {
  pointer: string;
  message: string;
}

/** RFC 9457 problem details as the hub sends them (application/problem+json). */
export interface ProblemDetails {
  type: string;
  title: string;
  status: number;
  detail?: string;
  code: string;
  instance?: string;
  errors?: ProblemFieldError[];
}

/** `data` of a `job.completed` callback. Exactly one of `output` / `error` is present. */
export interface JobCompletedData {
  job_id: string;
  request_id: string;
  route: string;
  status: FinalJobStatus;
  output?: unknown;
  error?: JobError;
  created_at: string;
  completed_at: string;
  /** Set when the output was cut to fit the callback size limit; read the job for all of it. */
  truncated?: boolean;
}

/** Body of a completion callback, as signed and sent by the hub. */
export interface JobCompletedEvent {
  type: "job.completed";
  /** RFC 3339 time the event was created. */
  timestamp: string;
  data: JobCompletedData;
}
