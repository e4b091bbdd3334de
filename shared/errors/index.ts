/** One field-level problem: where (RFC 6901 JSON pointer into the request body) and what. */
export interface FieldError {
  readonly pointer: string;
  readonly message: string;
}

export interface ProblemInit {
  readonly detail: string;
  readonly cause?: unknown;
  readonly errors?: readonly FieldError[];
  readonly headers?: Readonly<Record<string, string>>;
}

/**
 * Base of every error the hub turns into an HTTP answer: a stable `code`, an HTTP `status`, a
 * human `title`, and the underlying `cause`. Mapped to RFC 9457 problem+json in one place
 * (toProblem); nothing matches on messages.
 */
export abstract class SwitchyardError extends Error {
  abstract readonly code: string;
  abstract readonly status: number;
  abstract readonly title: string;
  readonly errors: readonly FieldError[] | undefined;
  readonly headers: Readonly<Record<string, string>>;

  constructor(init: ProblemInit) {
    super(init.detail, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = new.target.name;
    this.errors = init.errors;
    this.headers = init.headers ?? {};
  }
}

function define(code: string, status: number, title: string) {
  return class extends SwitchyardError {
    readonly code = code;
    readonly status = status;
    readonly title = title;
  };
}

export class InvalidRequestError extends define("invalid_request", 400, "Invalid request") {}
export class MalformedJsonError extends define("malformed_json", 400, "Malformed JSON body") {}
/** The request line or Host cannot be served: a bad Host, a proxy-style target for another host. */
export class BadRequestError extends define("bad_request", 400, "Bad request") {}
/**
 * The client went away before its request was complete. Nobody reads the answer; it exists so the
 * error path stays uniform, and it is logged at info, never as a server error.
 */
export class ClientDisconnectedError extends define(
  "client_disconnected",
  400,
  "The client closed the request",
) {}
export class CallbackUrlRefusedError extends define(
  "callback_url_refused",
  400,
  "callback_url is not allowed",
) {}
export class UnauthorizedError extends define("unauthorized", 401, "Authentication required") {}
export class RouteForbiddenError extends define(
  "route_not_allowed",
  403,
  "Route not allowed for this client",
) {}
export class JobNotFoundError extends define("job_not_found", 404, "Job not found") {}
export class NotFoundError extends define("not_found", 404, "Not found") {}
export class MethodNotAllowedError extends define(
  "method_not_allowed",
  405,
  "Method not allowed",
) {}
export class RequestConflictError extends define(
  "request_id_conflict",
  409,
  "request_id already used with a different body",
) {}
/** A cancel of a job that already ended otherwise (done, error, rejected): POST /jobs/{id}/cancel. */
export class JobFinalError extends define("job_final", 409, "The job has already ended") {}
/** An executor report that the job's current status does not allow (e.g. the job is final). */
export class JobStateConflictError extends define(
  "job_state_conflict",
  409,
  "The job's status does not allow this report",
) {}
export class PayloadTooLargeError extends define(
  "payload_too_large",
  413,
  "Request body too large",
) {}
export class UriTooLongError extends define("uri_too_long", 414, "URI too long") {}
export class UnsupportedMediaTypeError extends define(
  "unsupported_media_type",
  415,
  "Content-Type must be application/json",
) {}
export class RateLimitedError extends define("rate_limited", 429, "Too many requests") {}
export class HeadersTooLargeError extends define(
  "headers_too_large",
  431,
  "Request header fields too large",
) {}
export class InternalError extends define("internal_error", 500, "Internal error") {}
export class UnavailableError extends define(
  "unavailable",
  503,
  "Service temporarily unavailable",
) {}
export class StorageFullError extends define("storage_full", 503, "Event storage is full") {}

/** RFC 9457 problem details as Switchyard sends them. */
export interface Problem {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string;
  readonly code: string;
  readonly instance?: string;
  readonly errors?: readonly FieldError[];
}

export const PROBLEM_CONTENT_TYPE = "application/problem+json";

/** The problem type URI of a code; documented in docs/errors.md. */
export function problemType(code: string): string {
  return `https://switchyard.dev/problems/${code}`;
}

/** Converts any thrown value to a problem; unknown errors become a 500 without internals. */
export function toProblem(err: unknown, instance?: string): Problem {
  const known =
    err instanceof SwitchyardError ? err : new InternalError({ detail: "Internal error" });
  return {
    type: problemType(known.code),
    title: known.title,
    status: known.status,
    detail: known.message,
    code: known.code,
    ...(instance === undefined ? {} : { instance }),
    ...(known.errors === undefined ? {} : { errors: known.errors }),
  };
}

/** Builds the HTTP response for a thrown value. */
export function problemResponse(err: unknown, instance?: string): Response {
  const problem = toProblem(err, instance);
  const headers: Record<string, string> = { "content-type": PROBLEM_CONTENT_TYPE };
  if (err instanceof SwitchyardError) Object.assign(headers, err.headers);
  return new Response(JSON.stringify(problem), { status: problem.status, headers });
}
