import { randomBytes } from "node:crypto";

/** Prefix that marks a Standard Webhooks signing secret. */
export const WEBHOOK_SECRET_PREFIX = "whsec_";

/** Bounds for the decoded key length that Switchyard issues and accepts (Standard Webhooks: 24–64). */
export const WEBHOOK_SECRET_MIN_BYTES = 24;
export const WEBHOOK_SECRET_MAX_BYTES = 64;

/** Which part of a secret string is wrong. */
export type WebhookSecretProblem = "prefix" | "base64" | "length";

/** Thrown by {@link parseWebhookSecret}; `problem` names the failed rule. The secret itself is never echoed. */
export class WebhookSecretError extends Error {
  readonly problem: WebhookSecretProblem;
  constructor(problem: WebhookSecretProblem, message: string) {
    super(message);
    this.name = "WebhookSecretError";
    this.problem = problem;
  }
}

/** A parsed signing secret: the decoded HMAC key. Build it with {@link parseWebhookSecret}. */
export interface WebhookSecret {
  readonly kind: "webhook-secret";
  readonly key: Uint8Array;
}

export interface SecretLengthBounds {
  /** Smallest decoded length accepted, default 24. */
  minBytes?: number;
  /** Largest decoded length accepted, default 64. */
  maxBytes?: number;
}

// Standard base64 only (not base64url): padding optional, but no stray characters or whitespace.
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/**
 * Creates a new secret: `whsec_` + base64 of `bytes` random bytes (default 32, allowed 24–64).
 */
export function generateWebhookSecret(bytes = 32): string {
  if (
    !Number.isInteger(bytes) ||
    bytes < WEBHOOK_SECRET_MIN_BYTES ||
    bytes > WEBHOOK_SECRET_MAX_BYTES
  ) {
    throw new RangeError(
      `webhook secret length must be an integer from ${WEBHOOK_SECRET_MIN_BYTES} to ${WEBHOOK_SECRET_MAX_BYTES} bytes, got ${bytes}`,
    );
  }
  return WEBHOOK_SECRET_PREFIX + randomBytes(bytes).toString("base64");
}

/**
 * Parses `whsec_<base64>` into a key. Throws {@link WebhookSecretError} naming the problem:
 * a missing prefix, invalid base64, or a decoded length outside the bounds (default 24–64 bytes).
 * Pass smaller bounds only to interoperate with foreign test vectors.
 */
export function parseWebhookSecret(secret: string, bounds: SecretLengthBounds = {}): WebhookSecret {
  const minBytes = bounds.minBytes ?? WEBHOOK_SECRET_MIN_BYTES;
  const maxBytes = bounds.maxBytes ?? WEBHOOK_SECRET_MAX_BYTES;
  if (typeof secret !== "string" || !secret.startsWith(WEBHOOK_SECRET_PREFIX)) {
    throw new WebhookSecretError(
      "prefix",
      `webhook secret must start with "${WEBHOOK_SECRET_PREFIX}"`,
    );
  }
  const encoded = secret.slice(WEBHOOK_SECRET_PREFIX.length);
  const unpadded = encoded.replace(/=+$/, "");
  // Node's decoder silently skips bad characters, so check the alphabet and the round trip
  // (a length of 4n+1 characters can never be valid base64).
  if (!BASE64.test(encoded) || unpadded.length % 4 === 1) {
    throw new WebhookSecretError("base64", "webhook secret after the prefix is not valid base64");
  }
  const key = Buffer.from(encoded, "base64");
  if (key.toString("base64").replace(/=+$/, "") !== unpadded) {
    throw new WebhookSecretError("base64", "webhook secret after the prefix is not valid base64");
  }
  if (key.length < minBytes || key.length > maxBytes) {
    throw new WebhookSecretError(
      "length",
      `webhook secret must decode to ${minBytes}–${maxBytes} bytes, got ${key.length}`,
    );
  }
  return { kind: "webhook-secret", key: new Uint8Array(key) };
}

/** A secret as configured (`whsec_…` string) or already parsed. */
export type WebhookSecretInput = string | WebhookSecret;

/** Parses strings with the default bounds and passes parsed secrets through. */
export function toWebhookSecret(input: WebhookSecretInput): WebhookSecret {
  return typeof input === "string" ? parseWebhookSecret(input) : input;
}

/** What is wrong with a configured signing secret, in words that never echo it; undefined: nothing. */
export function webhookSecretProblem(secret: string): string | undefined {
  try {
    parseWebhookSecret(secret);
    return undefined;
  } catch (err) {
    return err instanceof WebhookSecretError ? err.message : "is not a usable signing secret";
  }
}
