/**
 * Switchyard SDK: a client for the hub's Client API v1 (submit runs, read, list, cancel and wait
 * for jobs) and verification of signed completion callbacks. See docs/sdk.md.
 */
export {
  createSwitchyardClient,
  newRequestId,
  type RequestOptions,
  type SwitchyardClient,
  type SwitchyardClientOptions,
} from "./client.js";
export { type BackoffPolicy, backoffDelay, type Clock, systemClock } from "./clock.js";
export {
  AuthenticationError,
  apiErrorFrom,
  ConflictError,
  InvalidRequestError,
  NotFoundError,
  PermissionDeniedError,
  PROBLEM_CODES,
  type ProblemCode,
  RateLimitError,
  ServerError,
  SwitchyardApiError,
  SwitchyardNetworkError,
  UnexpectedResponseError,
  WaitForJobTimeoutError,
} from "./errors.js";
export { LIST_LIMIT_MAX, LIST_LIMIT_MIN, listJobsPath } from "./jobs-query.js";
export type { FetchLike, RetryOptions } from "./transport.js";
export {
  type CallbackState,
  type CancelResult,
  FINAL_STATUSES,
  type FinalJobStatus,
  isFinalStatus,
  type Job,
  type JobCompletedData,
  type JobCompletedEvent,
  type JobError,
  type JobPage,
  type JobStatus,
  type ListJobsParams,
  type ProblemDetails,
  type ProblemFieldError,
  type RunRequest,
  type RunResult,
} from "./types.js";
export type { WaitOptions } from "./wait.js";
export {
  type HeaderSource,
  type VerifiedWebhook,
  type VerifyOptions,
  verifyCallback,
  verifyWebhook,
  type WebhookBody,
  type WebhookVerificationCode,
  WebhookVerificationError,
} from "./webhooks.js";
