import { describe, expect, test } from "bun:test";
import {
  type JobCompletedEvent,
  verifyCallback,
  type WebhookVerificationCode,
  WebhookVerificationError,
} from "../../sdk/index.ts";
import { generateWebhookSecret, webhookHeaders } from "../../shared/webhooks/index.ts";

const T = 1_760_000_000;
const now = () => T * 1000;
const secret = generateWebhookSecret();
const event: JobCompletedEvent = {
  type: "job.completed",
  timestamp: new Date(T * 1000).toISOString(),
  data: {
    job_id: "job_1",
    request_id: "r1",
    route: "demo",
    status: "done",
    output: { answer: 42 },
    created_at: "2025-10-09T08:00:00.000Z",
    completed_at: "2025-10-09T08:00:05.000Z",
  },
};
const body = JSON.stringify(event);
const headers = webhookHeaders({ id: "msg_cb1", timestamp: T, body, secrets: [secret] });

function codeOf(run: () => unknown): WebhookVerificationCode | undefined {
  try {
    run();
    return undefined;
  } catch (err) {
    if (err instanceof WebhookVerificationError) return err.code;
    throw err;
  }
}

describe("verifyCallback", () => {
  test("returns the parsed event for a valid callback (string or bytes)", () => {
    expect(verifyCallback(body, headers, [secret], { now })).toEqual(event);
    const bytes = new TextEncoder().encode(body);
    expect(verifyCallback(bytes, new Headers(headers), [secret], { now }).data.job_id).toBe(
      "job_1",
    );
  });

  test("accepts during rotation when any active secret matches", () => {
    expect(verifyCallback(body, headers, [generateWebhookSecret(), secret], { now }).type).toBe(
      "job.completed",
    );
  });

  const { "webhook-signature": _omit, ...withoutSignature } = headers;
  test.each<[WebhookVerificationCode, () => unknown]>([
    ["missing_header", () => verifyCallback(body, withoutSignature, [secret], { now })],
    [
      "invalid_timestamp",
      () => verifyCallback(body, { ...headers, "webhook-timestamp": "soon" }, [secret], { now }),
    ],
    [
      "timestamp_too_old",
      () => verifyCallback(body, headers, [secret], { now: () => (T + 301) * 1000 }),
    ],
    [
      "timestamp_too_new",
      () => verifyCallback(body, headers, [secret], { now: () => (T - 301) * 1000 }),
    ],
    ["no_matching_signature", () => verifyCallback(`${body}\n`, headers, [secret], { now })],
    [
      "no_matching_signature",
      () => verifyCallback(body, headers, [generateWebhookSecret()], { now }),
    ],
    ["invalid_secret", () => verifyCallback(body, headers, ["not-a-secret"], { now })],
  ])("fails with %s", (code, run) => {
    expect(codeOf(run)).toBe(code);
  });

  test("a narrower tolerance is honoured", () => {
    expect(
      codeOf(() =>
        verifyCallback(body, headers, [secret], { now: () => (T + 31) * 1000, toleranceSec: 30 }),
      ),
    ).toBe("timestamp_too_old");
  });
});
