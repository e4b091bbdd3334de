import type { Job, ProblemDetails, ProblemFieldError } from "./types.js";

/**
 * The problem codes the hub sends (docs/errors.md), with their HTTP status. `job_final` belongs to
 * the cancel endpoint. The hub may add codes: an unknown code still arrives as a
 * SwitchyardApiError (of the class its status maps to) with that code.
 */
export const PROBLEM_CODES = {
  invalid_request: 400,
  bad_request: 400,
  malformed_json: 400,
  callback_url_refused: 400,
  /** Logged by the hub when a client goes away mid-body; a client never receives it. */
  client_disconnected: 400,
  unauthorized: 401,
  route_not_allowed: 403,
  job_not_found: 404,
  not_found: 404,
  method_not_allowed: 405,
  request_id_conflict: 409,
  job_state_conflict: 409,
  job_final: 409,
  payload_too_large: 413,
  uri_too_long: 414,
  unsupported_media_type: 415,
  rate_limited: 429,
  headers_too_large: 431,
  internal_error: 500,
  unavailable: 503,
  storage_full: 503,
} as const satisfies Record<string, number>;

export type ProblemCode = keyof typeof PROBLEM_CODES;

/** Statuses after which the very same request may be sent again (same request_id). */
const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([429, 500, 502, 503, 504]);

/** A non-2xx answer from the hub, parsed from its RFC 9457 problem body. Switch on `code`. */
export class SwitchyardApiError extends Error {
  readonly status: number;
  /** Stable machine-readable code, e.g. "invalid_request" or "request_id_conflict". */
  readonly code: ProblemCode | (string & {});
  readonly title: string;
  readonly detail: string | undefined;
  readonly type: string;
  /** The request path the problem is about, when the hub sent one. */
  readonly instance: string | undefined;
  /** Every field problem, with an RFC 6901 pointer into the request. */
  readonly errors: readonly ProblemFieldError[];
  /** Seconds from Retry-After, when the hub sent one (429, 503). */
  readonly retryAfterSec: number | undefined;

  constructor(problem: ProblemDetails, retryAfterSec?: number) {
    super(`${problem.status} ${problem.code}: ${problem.detail ?? problem.title}`);
    this.name = new.target.name;
    this.status = problem.status;
    this.code = problem.code;
    this.title = problem.title;
    this.detail = problem.detail;
    this.type = problem.type;
    this.instance = problem.instance;
    this.errors = problem.errors ?? [];
    this.retryAfterSec = retryAfterSec;
  }

  /** True when the same request may be sent again later (429 and 5xx): same request_id. */
  get retryable(): boolean {
    return RETRYABLE_STATUSES.has(this.status);
  }
}

/** 400, 413, 414, 415, 431: the request itself is wrong; fix it, do not retry it. */
export class InvalidRequestError extends SwitchyardApiError {}
/** 401 unauthorized: no, malformed or unknown token. */
export class AuthenticationError extends SwitchyardApiError {}
/** 403 route_not_allowed: the route is unknown or not allowed for this client. */
export class PermissionDeniedError extends SwitchyardApiError {}
/** 404 job_not_found (unknown job, or another client's) or not_found (no such endpoint). */
export class NotFoundError extends SwitchyardApiError {}
/** 409 request_id_conflict (same request_id, other body) or job_final (cancel of a final job). */
export class ConflictError extends SwitchyardApiError {}
/** 429 rate_limited; `retryAfterSec` says when to try again. */
export class RateLimitError extends SwitchyardApiError {}
/** 5xx internal_error, unavailable, storage_full: nothing was stored; retry with the same request_id. */
export class ServerError extends SwitchyardApiError {}

type ApiErrorClass = new (problem: ProblemDetails, retryAfterSec?: number) => SwitchyardApiError;

function classFor(status: number): ApiErrorClass {
  if ([400, 413, 414, 415, 431].includes(status)) return InvalidRequestError;
  if (status === 401) return AuthenticationError;
  if (status === 403) return PermissionDeniedError;
  if (status === 404) return NotFoundError;
  if (status === 409) return ConflictError;
  if (status === 429) return RateLimitError;
  if (status >= 500) return ServerError;
  return SwitchyardApiError;
}

/**
 * Turns an answer's status and parsed body into the typed error. A body that is not a problem
 * (a proxy's HTML page, an empty 502) still gives an error, with code `http_<status>`.
 */
export function apiErrorFrom(input: {
  status: number;
  statusText?: string;
  body: unknown;
  retryAfterSec?: number | undefined;
}): SwitchyardApiError {
  const { status, body } = input;
  const b = (typeof body === "object" && body !== null ? body : {}) as Partial<ProblemDetails>;
  const problem: ProblemDetails = {
    type: typeof b.type === "string" ? b.type : "about:blank",
    title: typeof b.title === "string" ? b.title : input.statusText || `HTTP ${status}`,
    status,
    code: typeof b.code === "string" ? b.code : `http_${status}`,
    ...(typeof b.detail === "string" ? { detail: b.detail } : {}),
    ...(typeof b.instance === "string" ? { instance: b.instance } : {}),
    ...(Array.isArray(b.errors) ? { errors: b.errors } : {}),
  };
  const ErrorClass = classFor(status);
  return new ErrorClass(problem, input.retryAfterSec);
}

/**
 * No answer after all attempts (timeout or network failure). For run() the job may or may not
 * have been created: call run() again with the SAME request_id, never a new one.
 */
export class SwitchyardNetworkError extends Error {
  readonly kind: "timeout" | "network";
  readonly attempts: number;
  /** The request_id that was sent, for run(). */
  readonly requestId: string | undefined;

  constructor(init: {
    kind: "timeout" | "network";
    attempts: number;
    requestId?: string | undefined;
    cause?: unknown;
  }) {
    const what = init.kind === "timeout" ? "request timed out" : "network error";
    const hint = init.requestId ? `; retry with the same request_id "${init.requestId}"` : "";
    super(`${what} after ${init.attempts} attempt(s)${hint}`, { cause: init.cause });
    this.name = "SwitchyardNetworkError";
    this.kind = init.kind;
    this.attempts = init.attempts;
    this.requestId = init.requestId;
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

/** The hub answered 2xx with a body that is not what the API promises (e.g. a proxy's page). */
export class UnexpectedResponseError extends Error {
  readonly status: number;
  constructor(status: number, what: string) {
    super(`unexpected ${status} answer: ${what}`);
    this.name = "UnexpectedResponseError";
    this.status = status;
  }
}
