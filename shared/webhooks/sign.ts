import { createHmac } from "node:crypto";
import { toWebhookSecret, type WebhookSecret, type WebhookSecretInput } from "./secret.ts";

/** User-Agent sent with every callback. */
export const WEBHOOK_USER_AGENT = "Switchyard";

/** Raw body exactly as sent on the wire. Strings are hashed as UTF-8. */
export type WebhookBody = string | Uint8Array;

export interface SignInput {
  /** webhook-id: the same value on every retry of one callback. */
  id: string;
  /** webhook-timestamp in unix seconds (integer). */
  timestamp: number;
  body: WebhookBody;
  /** All active secrets; one signature is produced per secret (rotation). */
  secrets: readonly WebhookSecretInput[];
}

/**
 * Standard Webhooks header set plus our User-Agent and content type. A type alias (not an
 * interface) so it is assignable to plain header records.
 */
export type WebhookHeaders = {
  "webhook-id": string;
  "webhook-timestamp": string;
  "webhook-signature": string;
  "user-agent": string;
  "content-type": string;
};

/** Base64 HMAC-SHA256 over `{id}.{timestamp}.{body}`; the body bytes are hashed unchanged. */
export function computeSignature(
  secret: WebhookSecret,
  id: string,
  timestamp: string,
  body: WebhookBody,
): string {
  const hmac = createHmac("sha256", secret.key);
  hmac.update(`${id}.${timestamp}.`, "utf8");
  hmac.update(typeof body === "string" ? Buffer.from(body, "utf8") : body);
  return hmac.digest("base64");
}

function assertSignable(id: string, timestamp: number): void {
  if (!id || /[\s]/.test(id))
    throw new TypeError("webhook id must be a non-empty string without spaces");
  if (!Number.isSafeInteger(timestamp) || timestamp < 0) {
    throw new TypeError("webhook timestamp must be a non-negative integer number of unix seconds");
  }
}

/**
 * Returns the `webhook-signature` header value: one `v1,<base64>` per secret, space-separated.
 * Throws WebhookSecretError for an unparseable secret and TypeError for a bad id or timestamp.
 */
export function signWebhook({ id, timestamp, body, secrets }: SignInput): string {
  assertSignable(id, timestamp);
  if (secrets.length === 0) throw new TypeError("at least one webhook secret is required to sign");
  const ts = String(timestamp);
  return secrets.map((s) => `v1,${computeSignature(toWebhookSecret(s), id, ts, body)}`).join(" ");
}

/** The full header set for one delivery attempt of a callback. */
export function webhookHeaders(input: SignInput): WebhookHeaders {
  return {
    "webhook-id": input.id,
    "webhook-timestamp": String(input.timestamp),
    "webhook-signature": signWebhook(input),
    "user-agent": WEBHOOK_USER_AGENT,
    "content-type": "application/json",
  };
}
