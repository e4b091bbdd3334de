/**
 * Switchyard Client API v1 SDK: submit runs, read and wait for jobs, verify completion callbacks.
 * See docs/sdk.md.
 */
export {
  verifyWebhook,
  type WebhookVerificationCode,
  WebhookVerificationError,
} from "../shared/webhooks/index.ts";
export { type VerifyCallbackOptions, verifyCallback } from "./callbacks.ts";
export {
  createSwitchyardClient,
  newRequestId,
  type RequestOptions,
  type SwitchyardClient,
  type SwitchyardClientOptions,
  type WaitOptions,
} from "./client.ts";
export { type Clock, systemClock } from "./clock.ts";
export { SwitchyardApiError, SwitchyardNetworkError, WaitForJobTimeoutError } from "./errors.ts";
export type { FetchLike, RetryOptions } from "./transport.ts";
export {
  type CallbackState,
  FINAL_STATUSES,
  isFinalStatus,
  type Job,
  type JobCompletedEvent,
  type JobStatus,
  type ProblemDetails,
  type ProblemFieldError,
  type RunAccepted,
  type RunRequest,
  type RunResult,
} from "./types.ts";
