import { describe, expect, test } from "bun:test";
import {
  buildCallbackBody,
  callbackSettings,
  MAX_CALLBACK_BODY_BYTES,
  scheduleFor,
  webhookIdFor,
} from "../../services/callback/index.ts";
import { parseConfig } from "../../shared/config/index.ts";
import {
  afterAttempt,
  type JobEvent,
  type JobView,
  jittered,
  decideCallbackStep as nextStep,
  type RetryPolicy,
} from "../../shared/domain/index.ts";
import type { StoredEvent } from "../../shared/jobs/index.ts";
import type { DeliveryAttempt } from "../../shared/net/index.ts";

const NOW = Date.parse("2026-01-01T00:00:10.000Z");
const base = {
  id: "e",
  schema_version: 1 as const,
  job_id: "job_a",
  client_id: "acme",
  occurred_at: "2026-01-01T00:00:00.000Z",
};
const stored = (seq: number, event: JobEvent): StoredEvent => ({ seq, event });
const attempted = (
  seq: number,
  data: Extract<JobEvent, { type: "callback.attempted" }>["data"],
): StoredEvent => stored(seq, { ...base, type: "callback.attempted", data });

describe("nextStep: the `.cb` log is the durable schedule", () => {
  const original = { kind: "original" } as const;

  test("no events yet: attempt 1", () => {
    expect(nextStep(original, null, NOW)).toEqual({ kind: "attempt", attempt: 1 });
  });

  test("a failed attempt whose time has come: the next attempt", () => {
    const last = attempted(5, {
      attempt: 2,
      status_code: 500,
      duration_ms: 3,
      error_class: "http_status",
      next_attempt_at: "2026-01-01T00:00:09.500Z",
    });
    expect(nextStep(original, last, NOW)).toEqual({ kind: "attempt", attempt: 3 });
  });

  test("woken early (a NATS restart redelivers after ack_wait): park until next_attempt_at", () => {
    const last = attempted(5, {
      attempt: 1,
      duration_ms: 3,
      error_class: "network",
      next_attempt_at: "2026-01-01T01:00:10.000Z",
    });
    expect(nextStep(original, last, NOW)).toEqual({ kind: "wait", delayMs: 3_600_000, attempt: 2 });
  });

  test("a crash after recording a 2xx attempt completes it as delivered without sending again", () => {
    const last = attempted(7, { attempt: 3, status_code: 204, duration_ms: 3 });
    expect(nextStep(original, last, NOW)).toEqual({
      kind: "finish",
      outcome: "delivered",
      attempts: 3,
    });
  });

  test("a crash after recording a last failed attempt completes it as failed with its reason", () => {
    const gone = attempted(7, {
      attempt: 1,
      status_code: 410,
      duration_ms: 3,
      error_class: "http_status",
    });
    expect(nextStep(original, gone, NOW)).toMatchObject({ outcome: "failed", reason: "gone" });
    const blocked = attempted(7, { attempt: 1, duration_ms: 0, error_class: "ssrf_blocked" });
    expect(nextStep(original, blocked, NOW)).toMatchObject({ reason: "refused" });
    const last = attempted(7, { attempt: 8, duration_ms: 0, error_class: "timeout" });
    expect(nextStep(original, last, NOW)).toMatchObject({ reason: "exhausted", attempts: 8 });
  });

  test("settled callbacks are not sent again by a redelivered message", () => {
    const delivered = stored(9, { ...base, type: "callback.delivered", data: { attempts: 1 } });
    expect(nextStep(original, delivered, NOW).kind).toBe("settled");
  });

  test("a redelivery request starts its own attempts; the original message stands aside", () => {
    const request = stored(12, {
      ...base,
      type: "callback.redelivery_requested",
      data: { attempts: 3 },
    });
    const redelivery = { kind: "redelivery", seq: 12, baseAttempts: 3 } as const;
    expect(nextStep(redelivery, request, NOW)).toEqual({ kind: "attempt", attempt: 4 });
    expect(nextStep(original, request, NOW)).toEqual({ kind: "settled", why: "superseded" });
    const own = attempted(13, {
      attempt: 4,
      duration_ms: 1,
      error_class: "network",
      next_attempt_at: "2026-01-01T00:00:00.000Z",
      redelivery_seq: 12,
    });
    expect(nextStep(redelivery, own, NOW)).toEqual({ kind: "attempt", attempt: 5 });
    expect(nextStep(original, own, NOW).kind).toBe("settled");
    expect(nextStep({ ...redelivery, seq: 20 }, own, NOW).kind).toBe("settled");
  });
});

describe("afterAttempt", () => {
  const policy: RetryPolicy = {
    scheduleMs: [5_000, 300_000],
    jitter: 0.2,
    maxRetryAfterMs: 3_600_000,
    random: () => 0.5,
  };
  const result = (over: Partial<DeliveryAttempt>): DeliveryAttempt => ({
    ok: false,
    durationMs: 1,
    gone: false,
    errorClass: "http_status",
    status: 500,
    ...over,
  });

  test("2xx delivers; 410 and SSRF refusals stop at once", () => {
    expect(afterAttempt(result({ ok: true, status: 200 }), 0, policy).kind).toBe("delivered");
    expect(afterAttempt(result({ status: 410, gone: true }), 0, policy)).toEqual({
      kind: "failed",
      reason: "gone",
    });
    expect(afterAttempt(result({ errorClass: "ssrf_blocked" }), 0, policy)).toEqual({
      kind: "failed",
      reason: "refused",
    });
  });

  test("failures follow the schedule, then exhaust", () => {
    expect(afterAttempt(result({}), 0, policy)).toEqual({ kind: "retry", delayMs: 5_000 });
    expect(afterAttempt(result({}), 1, policy)).toEqual({ kind: "retry", delayMs: 300_000 });
    expect(afterAttempt(result({}), 2, policy)).toEqual({ kind: "failed", reason: "exhausted" });
  });

  test("Retry-After stretches a delay up to the bound, never shortens it", () => {
    expect(afterAttempt(result({ retryAfterSec: 60 }), 0, policy)).toEqual({
      kind: "retry",
      delayMs: 60_000,
    });
    expect(afterAttempt(result({ retryAfterSec: 1 }), 1, policy)).toEqual({
      kind: "retry",
      delayMs: 300_000,
    });
    expect(afterAttempt(result({ retryAfterSec: 86_400 }), 0, policy)).toEqual({
      kind: "retry",
      delayMs: 3_600_000,
    });
  });

  test("jitter stays within ±20%", () => {
    expect(jittered(10_000, 0.2, () => 0)).toBe(8_000);
    expect(jittered(10_000, 0.2, () => 0.999_999)).toBe(12_000);
    expect(jittered(0, 0.2, () => 0.7)).toBe(0);
  });
});

describe("payload", () => {
  const view: JobView = {
    job_id: "job_PCAhqaEUg3hQ_-knbuaoVQ",
    client_id: "acme",
    request_id: "r1",
    route: "demo.echo",
    status: "done",
    created_at: "2026-01-01T00:00:00.000Z",
    updated_at: "2026-01-01T00:00:01.000Z",
    completed_at: "2026-01-01T00:00:01.000Z",
    output: "hello",
    fingerprint: "0".repeat(64),
    seq: 3,
  };

  test("the webhook-id is derived from the job id", () => {
    expect(webhookIdFor(view.job_id)).toBe("msg_job_PCAhqaEUg3hQ_-knbuaoVQ");
  });

  test("the body has the documented shape and no internal fields", () => {
    expect(JSON.parse(buildCallbackBody(view))).toEqual({
      type: "job.completed",
      timestamp: "2026-01-01T00:00:01.000Z",
      data: {
        job_id: view.job_id,
        request_id: "r1",
        route: "demo.echo",
        status: "done",
        output: "hello",
        created_at: "2026-01-01T00:00:00.000Z",
        completed_at: "2026-01-01T00:00:01.000Z",
      },
    });
    const failed = { ...view, status: "error" as const, error: { code: "x", message: "y" } };
    const { output: _o, ...rest } = failed;
    expect(JSON.parse(buildCallbackBody(rest)).data).toMatchObject({ error: { code: "x" } });
    expect(JSON.parse(buildCallbackBody(rest)).data.output).toBeUndefined();
  });

  test("a large string output is cut to fit, with truncated: true", () => {
    const body = buildCallbackBody({ ...view, output: "é😀".repeat(20_000) });
    expect(Buffer.byteLength(body)).toBeLessThanOrEqual(MAX_CALLBACK_BODY_BYTES);
    const parsed = JSON.parse(body);
    expect(parsed.data.truncated).toBe(true);
    expect(parsed.data.output.length).toBeGreaterThan(1_000);
    expect(parsed.data.output).not.toContain("\uFFFD");
  });

  test("a large structured output is left out, with truncated: true", () => {
    const output = { rows: Array.from({ length: 5_000 }, (_, i) => ({ i })) };
    const parsed = JSON.parse(buildCallbackBody({ ...view, output }));
    expect(parsed.data.truncated).toBe(true);
    expect(parsed.data.output).toBeUndefined();
  });
});

describe("settings", () => {
  const yaml = (extra: string) => `
clients:
  - id: acme
    token_sha256: ["${"a".repeat(64)}"]
    routes: ["*"]
    callback_retry_schedule: ["1s", "2s"]
  - id: other
    token_sha256: ["${"b".repeat(64)}"]
    routes: ["*"]
${extra}`;

  test("defaults: 15 s per attempt, the documented schedule, ±20% jitter", () => {
    const settings = callbackSettings(parseConfig(yaml(""), {}));
    expect(settings.timeoutMs).toBe(15_000);
    expect(settings.scheduleMs).toEqual([
      5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000,
    ]);
    expect(settings.jitter).toBe(0.2);
    expect(scheduleFor(settings, "acme")).toEqual([1_000, 2_000]);
    expect(scheduleFor(settings, "other")).toBe(settings.scheduleMs);
    expect(settings.concurrency).toBe(256);
    expect(settings.perDestinationConcurrency).toBe(64);
    expect(settings.maxWaitingPerDestination).toBe(5_000);
  });

  test("a bad allowlist entry stops start-up naming the entry (the config check, before connecting)", () => {
    expect(() => parseConfig(yaml("callbacks: { allow_cidrs: ['10.0.0.1/8'] }"), {})).toThrow(
      'callbacks.allow_cidrs[0]: invalid CIDR "10.0.0.1/8": host bits are set; did you mean 10.0.0.0/8?',
    );
  });
});
