import { createHmac, timingSafeEqual } from "node:crypto";
import type { JobCompletedEvent } from "./types.js";

/** Stable codes naming the check that failed. */
export type WebhookVerificationCode =
  | "missing_header"
  | "invalid_timestamp"
  | "timestamp_too_old"
  | "timestamp_too_new"
  | "no_matching_signature"
  | "invalid_secret"
  | "invalid_body";

/** Thrown by verifyCallback and verifyWebhook. Switch on `code`; the message is for humans. */
export class WebhookVerificationError extends Error {
  readonly code: WebhookVerificationCode;
  constructor(code: WebhookVerificationCode, message: string) {
    super(message);
    this.name = "WebhookVerificationError";
    this.code = code;
  }
}

/** Raw body exactly as received. Strings are hashed as UTF-8. */
export type WebhookBody = string | Uint8Array;

/** Fetch `Headers`, or a plain object such as node's `IncomingHttpHeaders` (any key case). */
export type HeaderSource =
  | { get(name: string): string | null }
  | Readonly<Record<string, string | readonly string[] | undefined>>;

export interface VerifyOptions {
  /** Accepted clock skew in either direction, default 300 s (the Standard Webhooks default). */
  toleranceSec?: number;
  /** Clock in epoch milliseconds; default `Date.now`. Inject it in tests. */
  now?: () => number;
}

/** What a successful verification established: `id` is the dedup key (same on every retry). */
export interface VerifiedWebhook {
  id: string;
  timestamp: number;
}

const SECRET_PREFIX = "whsec_";
// Standard base64 only (not base64url): padding optional, no stray characters or whitespace.
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

function decodeBase64(text: string): Uint8Array | undefined {
  if (!BASE64.test(text) || text.replace(/=+$/, "").length % 4 === 1) return undefined;
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

function parseSecret(secret: string, index: number): Uint8Array {
  const fail = (why: string) =>
    new WebhookVerificationError("invalid_secret", `secret #${index + 1}: ${why}`);
  if (typeof secret !== "string" || !secret.startsWith(SECRET_PREFIX)) {
    throw fail(`must start with "${SECRET_PREFIX}"`);
  }
  const key = decodeBase64(secret.slice(SECRET_PREFIX.length));
  if (!key) throw fail("is not valid base64 after the prefix");
  // The hub issues 24 to 64 byte keys; anything shorter is a truncated or mistyped secret.
  if (key.length < 24 || key.length > 64) throw fail(`decodes to ${key.length} bytes, not 24–64`);
  return key;
}

function readHeader(headers: HeaderSource, name: string): string | undefined {
  if (typeof headers.get === "function") {
    return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  }
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() !== name) continue;
    if (typeof value === "string") return value;
    if (Array.isArray(value)) return value.join(" ");
  }
  return undefined;
}

function required(headers: HeaderSource, name: string): string {
  const value = readHeader(headers, name)?.trim();
  if (!value) throw new WebhookVerificationError("missing_header", `missing header ${name}`);
  return value;
}

function checkTimestamp(text: string, toleranceSec: number, nowMs: number): number {
  if (!/^\d{1,15}$/.test(text)) {
    throw new WebhookVerificationError(
      "invalid_timestamp",
      "webhook-timestamp is not unix seconds",
    );
  }
  const timestamp = Number(text);
  const nowSec = Math.floor(nowMs / 1000);
  if (nowSec - timestamp > toleranceSec) {
    throw new WebhookVerificationError(
      "timestamp_too_old",
      `webhook-timestamp is more than ${toleranceSec} s in the past`,
    );
  }
  if (timestamp - nowSec > toleranceSec) {
    throw new WebhookVerificationError(
      "timestamp_too_new",
      `webhook-timestamp is more than ${toleranceSec} s in the future`,
    );
  }
  return timestamp;
}

/**
 * Verifies a Standard Webhooks request: headers present, timestamp within ±toleranceSec of now,
 * and at least one `v1,` signature (HMAC-SHA256 over `{id}.{timestamp}.{body}`) matching one of
 * `secrets`. Several secrets allow rotation. Pass the raw body exactly as received.
 */
export function verifyWebhook(
  rawBody: WebhookBody,
  headers: HeaderSource,
  secrets: readonly string[],
  { toleranceSec = 300, now = Date.now }: VerifyOptions = {},
): VerifiedWebhook {
  if (!Array.isArray(secrets) || secrets.length === 0) {
    throw new WebhookVerificationError("invalid_secret", "no webhook secret given");
  }
  const keys = secrets.map(parseSecret);
  const id = required(headers, "webhook-id");
  const timestampText = required(headers, "webhook-timestamp");
  const signatureHeader = required(headers, "webhook-signature");
  const timestamp = checkTimestamp(timestampText, toleranceSec, now());

  // Only v1 entries count; other versions are skipped so senders can add schemes later.
  const candidates = signatureHeader
    .split(" ")
    .filter((part) => part.startsWith("v1,"))
    .map((part) => decodeBase64(part.slice(3)))
    .filter((bytes): bytes is Uint8Array => bytes !== undefined);
  const body = typeof rawBody === "string" ? new TextEncoder().encode(rawBody) : rawBody;
  for (const key of keys) {
    const hmac = createHmac("sha256", key);
    hmac.update(new TextEncoder().encode(`${id}.${timestampText}.`));
    hmac.update(body);
    const expected = new Uint8Array(hmac.digest());
    // Length leaks nothing (always 32 for SHA-256); timingSafeEqual needs equal lengths.
    const match = (c: Uint8Array) => c.length === expected.length && timingSafeEqual(c, expected);
    if (candidates.some(match)) return { id, timestamp };
  }
  throw new WebhookVerificationError(
    "no_matching_signature",
    "no webhook-signature matches any given secret",
  );
}

/**
 * Verifies a completion callback and returns its parsed `job.completed` event. Pass the raw body
 * as received and every secret you accept (old and new during a rotation). Deduplicate on the
 * `webhook-id` header: the hub sends the same id on every retry of one callback. The only event
 * type today is `job.completed`; check `type` all the same, since new types may be added.
 */
export function verifyCallback(
  rawBody: WebhookBody,
  headers: HeaderSource,
  secrets: readonly string[],
  options: VerifyOptions = {},
): JobCompletedEvent {
  verifyWebhook(rawBody, headers, secrets, options);
  const text = typeof rawBody === "string" ? rawBody : new TextDecoder().decode(rawBody);
  let event: unknown;
  try {
    event = JSON.parse(text);
  } catch {
    throw new WebhookVerificationError("invalid_body", "the signed body is not JSON");
  }
  if (typeof event !== "object" || event === null) {
    throw new WebhookVerificationError("invalid_body", "the signed body is not a JSON object");
  }
  return event as JobCompletedEvent;
}
