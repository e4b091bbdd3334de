import type { Job, ProblemDetails, ProblemFieldError } from "./types.ts";

/** A non-2xx answer from the service, parsed from its RFC 9457 problem body. */
export class SwitchyardApiError extends Error {
  readonly status: number;
  /** Stable machine-readable code, e.g. "validation_failed" or "idempotency_conflict". */
  readonly code: string;
  readonly title: string;
  readonly detail: string | undefined;
  readonly type: string;
  readonly errors: readonly ProblemFieldError[];
  /** Seconds from Retry-After, when the service sent one (429, 503). */
  readonly retryAfterSec: number | undefined;

  constructor(problem: ProblemDetails, retryAfterSec?: number) {
    super(`${problem.status} ${problem.code}: ${problem.detail ?? problem.title}`);
    this.name = "SwitchyardApiError";
    this.status = problem.status;
    this.code = problem.code;
    this.title = problem.title;
    this.detail = problem.detail;
    this.type = problem.type;
    this.errors = problem.errors ?? [];
    this.retryAfterSec = retryAfterSec;
  }
}

/**
 * No answer after all attempts (timeout or network failure). For run(), the work may or may not
 * have been accepted: call run() again with the SAME request_id, never a new one.
 */
export class SwitchyardNetworkError extends Error {
  readonly kind: "timeout" | "network";
  readonly attempts: number;
  /** The request_id that was sent, for run(). */
  readonly requestId: string | undefined;

  constructor(kind: "timeout" | "network", attempts: number, requestId?: string, cause?: unknown) {
    super(
      `${kind === "timeout" ? "request timed out" : "network error"} after ${attempts} attempt(s)` +
        (requestId ? `; retry with the same request_id "${requestId}"` : ""),
      { cause },
    );
    this.name = "SwitchyardNetworkError";
    this.kind = kind;
    this.attempts = attempts;
    this.requestId = requestId;
  }
}

/** waitForJob() reached its timeout before the job became final. The job keeps running. */
export class WaitForJobTimeoutError extends Error {
  readonly jobId: string;
  /** Last record seen, if any poll succeeded. */
  readonly lastJob: Job | undefined;

  constructor(jobId: string, timeoutMs: number, lastJob?: Job) {
    super(
      `job ${jobId} not final after ${timeoutMs} ms (last status: ${lastJob?.status ?? "unknown"})`,
    );
    this.name = "WaitForJobTimeoutError";
    this.jobId = jobId;
    this.lastJob = lastJob;
  }
}
