import {
  type HeaderSource,
  verifyWebhook,
  type WebhookBody,
  type WebhookSecretInput,
} from "../shared/webhooks/index.ts";
import type { JobCompletedEvent } from "./types.ts";

export interface VerifyCallbackOptions {
  /** Accepted clock skew in seconds, default 300. */
  toleranceSec?: number;
  /** Epoch milliseconds; default Date.now. */
  now?: () => number;
}

/**
 * Verifies a completion callback (Standard Webhooks) and returns its parsed body.
 * Pass the raw body exactly as received and every active secret (during rotation, old and new).
 * Throws WebhookVerificationError whose `code` names the failed check: missing_header,
 * invalid_timestamp, timestamp_too_old, timestamp_too_new, no_matching_signature, invalid_secret.
 * Deduplicate on `webhook-id` (the same id is reused on every retry of one callback).
 */
export function verifyCallback(
  rawBody: WebhookBody,
  headers: HeaderSource,
  secrets: readonly WebhookSecretInput[],
  options: VerifyCallbackOptions = {},
): JobCompletedEvent {
  verifyWebhook(rawBody, headers, secrets, options);
  const text = typeof rawBody === "string" ? rawBody : new TextDecoder().decode(rawBody);
  return JSON.parse(text) as JobCompletedEvent;
}
