import { timingSafeEqual } from "node:crypto";
import {
  toWebhookSecret,
  type WebhookSecret,
  WebhookSecretError,
  type WebhookSecretInput,
} from "./secret.ts";
import { computeSignature, type WebhookBody } from "./sign.ts";

/** Stable codes naming the check that failed. */
export type WebhookVerificationCode =
  | "missing_header"
  | "invalid_timestamp"
  | "timestamp_too_old"
  | "timestamp_too_new"
  | "no_matching_signature"
  | "invalid_secret";

/** Thrown by {@link verifyWebhook}. Switch on `code`; the message is for humans. */
export class WebhookVerificationError extends Error {
  readonly code: WebhookVerificationCode;
  constructor(code: WebhookVerificationCode, message: string) {
    super(message);
    this.name = "WebhookVerificationError";
    this.code = code;
  }
}

/** Fetch `Headers`, or a plain object such as node's `IncomingHttpHeaders` (any key case). */
export type HeaderSource =
  | Headers
  | Readonly<Record<string, string | readonly string[] | undefined>>;

export interface VerifyOptions {
  /** Accepted clock skew in either direction, default 300 s (the Standard Webhooks default). */
  toleranceSec?: number;
  /** Clock in epoch milliseconds; default `Date.now`. Inject it in tests. */
  now?: () => number;
}

/** What a successful verification established. */
export interface VerifiedWebhook {
  id: string;
  timestamp: number;
}

function readHeader(headers: HeaderSource, name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
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

function parseSecrets(secrets: readonly WebhookSecretInput[]): WebhookSecret[] {
  if (secrets.length === 0) {
    throw new WebhookVerificationError("invalid_secret", "no webhook secret configured");
  }
  return secrets.map((s, i) => {
    try {
      return toWebhookSecret(s);
    } catch (err) {
      const why = err instanceof WebhookSecretError ? err.message : "unreadable";
      throw new WebhookVerificationError("invalid_secret", `secret #${i + 1}: ${why}`);
    }
  });
}

function equalBase64(expected: Buffer, candidate: string): boolean {
  const got = Buffer.from(candidate, "base64");
  // Length leaks nothing secret (it is fixed at 32 for SHA-256); timingSafeEqual needs equal lengths.
  return got.length === expected.length && timingSafeEqual(got, expected);
}

/**
 * Verifies a Standard Webhooks request: headers present, timestamp within ±toleranceSec of
 * `now`, and at least one `v1,` signature matching one of `secrets` (several secrets allow
 * rotation). Pass the raw body exactly as received: re-serialised JSON will not verify.
 * Throws {@link WebhookVerificationError} whose `code` names the failed check.
 */
export function verifyWebhook(
  rawBody: WebhookBody,
  headers: HeaderSource,
  secrets: readonly WebhookSecretInput[],
  { toleranceSec = 300, now = Date.now }: VerifyOptions = {},
): VerifiedWebhook {
  const keys = parseSecrets(secrets);
  const id = required(headers, "webhook-id");
  const timestampText = required(headers, "webhook-timestamp");
  const signatureHeader = required(headers, "webhook-signature");

  if (!/^\d{1,15}$/.test(timestampText)) {
    throw new WebhookVerificationError(
      "invalid_timestamp",
      "webhook-timestamp is not unix seconds",
    );
  }
  const timestamp = Number(timestampText);
  const nowSec = Math.floor(now() / 1000);
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

  // Only v1 entries count; unknown versions are skipped so senders can add schemes later.
  const candidates = signatureHeader
    .split(" ")
    .filter((part) => part.startsWith("v1,"))
    .map((part) => part.slice(3));
  for (const key of keys) {
    const expected = Buffer.from(computeSignature(key, id, timestampText, rawBody), "base64");
    if (candidates.some((c) => equalBase64(expected, c))) return { id, timestamp };
  }
  throw new WebhookVerificationError(
    "no_matching_signature",
    "no webhook-signature matches any configured secret",
  );
}
