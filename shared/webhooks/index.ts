export type { FinalJobStatus, JobCompletedData, JobCompletedEvent } from "./payload.ts";
export {
  generateWebhookSecret,
  parseWebhookSecret,
  type SecretLengthBounds,
  toWebhookSecret,
  WEBHOOK_SECRET_MAX_BYTES,
  WEBHOOK_SECRET_MIN_BYTES,
  WEBHOOK_SECRET_PREFIX,
  type WebhookSecret,
  WebhookSecretError,
  type WebhookSecretInput,
  type WebhookSecretProblem,
  webhookSecretProblem,
} from "./secret.ts";
export {
  computeSignature,
  createWebhookSigner,
  type SignInput,
  signWebhook,
  WEBHOOK_USER_AGENT,
  type WebhookBody,
  type WebhookHeaders,
  type WebhookSignerOptions,
  webhookHeaders,
} from "./sign.ts";
export {
  type HeaderSource,
  type VerifiedWebhook,
  type VerifyOptions,
  verifyWebhook,
  type WebhookVerificationCode,
  WebhookVerificationError,
} from "./verify.ts";
