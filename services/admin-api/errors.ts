import { SwitchyardError } from "../../shared/errors/index.ts";

/*
 * Problems only the operator API (/admin/v1) and the console send. Kept apart from the Client API
 * codes in index.ts, which the SDKs restate one for one; mapped to problem+json by the same
 * problemResponse (docs/errors.md, "Operator API").
 */

function define(code: string, status: number, title: string) {
  return class extends SwitchyardError {
    readonly code = code;
    readonly status = status;
    readonly title = title;
  };
}

/** A viewer asked for an action, or a payload without read_payloads. */
export class ForbiddenError extends define("forbidden", 403, "Not allowed for this operator") {}
/** A console action without a valid CSRF token (or from another origin). */
export class CsrfError extends define("csrf_failed", 403, "CSRF check failed") {}
/** A retry of a job that did not end in error or rejected. */
export class JobNotRetryableError extends define(
  "job_not_retryable",
  409,
  "Only a job that ended in error or rejected can be retried",
) {}
/** A bulk action whose filter matches more jobs than `admin.max_bulk`. */
export class BulkTooLargeError extends define(
  "bulk_too_large",
  400,
  "The filter matches too many jobs; narrow it",
) {}
