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
  // A string is hashed as its UTF-8 bytes without copying it into a Buffer first.
  if (typeof body === "string") hmac.update(body, "utf8");
  else hmac.update(body);
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

export interface WebhookSignerOptions {
  /** Parsed secrets kept; the oldest is forgotten beyond it (rotations add new ones). */
  readonly maxSecrets?: number;
}

/** A keyed HMAC-SHA256 state: copied per signature instead of importing the key again. */
interface KeyedHmac {
  copy(): { update(data: string): unknown; digest(encoding: "base64"): string };
}

/** Bun's HMAC state can be copied with its key imported; elsewhere the key is imported per call. */
function keyedHmac(secret: WebhookSecret): (text: string) => string {
  const Hasher = (
    globalThis as { Bun?: { CryptoHasher: new (a: string, key: Uint8Array) => KeyedHmac } }
  ).Bun?.CryptoHasher;
  if (Hasher === undefined)
    return (text) => createHmac("sha256", secret.key).update(text, "utf8").digest("base64");
  const keyed = new Hasher("sha256", secret.key);
  return (text) => {
    const hmac = keyed.copy();
    hmac.update(text);
    return hmac.digest("base64");
  };
}

/**
 * {@link webhookHeaders} for a caller that signs often with the same configured secrets: each
 * `whsec_…` string is parsed (checked and base64-decoded) and its HMAC key imported once, not at
 * every attempt. A secret rotated in by a reload is a new string, prepared on its first use; one
 * rotated out is never used again (the caller passes the secrets active now) and drops out
 * beyond the bound. The signatures are the ones {@link signWebhook} computes.
 */
export function createWebhookSigner(
  options: WebhookSignerOptions = {},
): (input: SignInput) => WebhookHeaders {
  const max = options.maxSecrets ?? 1_024;
  const prepared = new Map<WebhookSecretInput, (text: string) => string>();
  const signerOf = (secret: WebhookSecretInput): ((text: string) => string) => {
    const found = prepared.get(secret);
    if (found !== undefined) return found;
    const sign = keyedHmac(toWebhookSecret(secret));
    prepared.set(secret, sign);
    if (prepared.size > max) prepared.delete(prepared.keys().next().value as WebhookSecretInput);
    return sign;
  };
  return (input) => {
    const { id, timestamp, body, secrets } = input;
    if (typeof body !== "string") return webhookHeaders(input);
    assertSignable(id, timestamp);
    if (secrets.length === 0)
      throw new TypeError("at least one webhook secret is required to sign");
    const ts = String(timestamp);
    const signed = `${id}.${ts}.${body}`;
    let signature = "";
    for (const secret of secrets) {
      signature += `${signature === "" ? "" : " "}v1,${signerOf(secret)(signed)}`;
    }
    return {
      "webhook-id": id,
      "webhook-timestamp": ts,
      "webhook-signature": signature,
      "user-agent": WEBHOOK_USER_AGENT,
      "content-type": "application/json",
    };
  };
}
