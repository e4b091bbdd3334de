import type { EventData, JobEvent } from "./events.ts";

/**
 * What drives one delivery: the job's final status event (the original delivery) or an operator's
 * callback.redelivery_requested event at stream sequence `seq`. Each has its own attempts in the
 * `.cb` log, told apart by `redelivery_seq`, so two drivers never continue each other's retries.
 */
export type DeliveryTrigger =
  | { readonly kind: "original" }
  | { readonly kind: "redelivery"; readonly seq: number; readonly baseAttempts: number };

/** An event of a job's `.cb` subject with its stream sequence. */
export interface CallbackLogEntry {
  readonly seq: number;
  readonly event: JobEvent;
}

export type CallbackFailReason = "exhausted" | "gone" | "refused";

/** The next step, decided from the last `.cb` event alone (the log is the durable schedule). */
export type CallbackStep =
  | { readonly kind: "settled"; readonly why: "delivered_or_failed" | "superseded" }
  | {
      readonly kind: "finish";
      readonly outcome: "delivered" | "failed";
      readonly reason?: CallbackFailReason;
      readonly attempts: number;
    }
  | { readonly kind: "wait"; readonly delayMs: number; readonly attempt: number }
  | { readonly kind: "attempt"; readonly attempt: number };

/** A delivery woken less than this before its due time is attempted rather than parked again. */
export const EARLY_SLACK_MS = 1_000;

function belongs(trigger: DeliveryTrigger, redeliverySeq: number | undefined): boolean {
  return trigger.kind === "original" ? redeliverySeq === undefined : redeliverySeq === trigger.seq;
}

/** The step after a recorded attempt of this trigger. */
function afterRecordedAttempt(data: EventData<"callback.attempted">, nowMs: number): CallbackStep {
  const answered2xx =
    data.status_code !== undefined && data.status_code >= 200 && data.status_code < 300;
  // 0.1 recorded an attempt and its outcome as two events; a crash between them is completed here.
  if (answered2xx && data.error_class === undefined) {
    return { kind: "finish", outcome: "delivered", attempts: data.attempt };
  }
  if (data.next_attempt_at === undefined) {
    const reason: CallbackFailReason =
      data.status_code === 410
        ? "gone"
        : data.error_class === "ssrf_blocked"
          ? "refused"
          : "exhausted";
    return { kind: "finish", outcome: "failed", reason, attempts: data.attempt };
  }
  const dueIn = Date.parse(data.next_attempt_at) - nowMs;
  if (dueIn > EARLY_SLACK_MS) return { kind: "wait", delayMs: dueIn, attempt: data.attempt + 1 };
  return { kind: "attempt", attempt: data.attempt + 1 };
}

/**
 * decide(deliver, `.cb` log): what a delivery of the trigger should do now, from the last `.cb`
 * event alone. Pure. Used when the service cannot trust what it carries (a redelivered message, a
 * lost optimistic-concurrency race, an operator's redelivery): a settled callback is not sent
 * again, another trigger's attempts are left alone, an attempt woken early waits for its
 * recorded next_attempt_at, and an attempt recorded by 0.1 without its outcome is completed.
 */
export function decideCallbackStep(
  trigger: DeliveryTrigger,
  last: CallbackLogEntry | null,
  nowMs: number,
): CallbackStep {
  if (last === null) {
    return trigger.kind === "original"
      ? { kind: "attempt", attempt: 1 }
      : { kind: "settled", why: "superseded" };
  }
  const event = last.event;
  switch (event.type) {
    case "callback.delivered":
    case "callback.failed":
      return { kind: "settled", why: "delivered_or_failed" };
    case "callback.redelivery_requested":
      return trigger.kind === "redelivery" && trigger.seq === last.seq
        ? { kind: "attempt", attempt: trigger.baseAttempts + 1 }
        : { kind: "settled", why: "superseded" };
    case "callback.attempted":
      if (!belongs(trigger, event.data.redelivery_seq)) {
        return { kind: "settled", why: "superseded" };
      }
      return afterRecordedAttempt(event.data, nowMs);
    default:
      // Other event types never land on `.cb`; treat them as nothing to do rather than loop.
      return { kind: "settled", why: "superseded" };
  }
}

/** What an attempt's HTTP exchange came to (shared/net's DeliveryAttempt fits). */
export interface AttemptResult {
  /** True only for a 2xx answer. */
  readonly ok: boolean;
  readonly status?: number;
  readonly durationMs: number;
  readonly errorClass?: string;
  readonly retryAfterSec?: number;
  /** 410 Gone. */
  readonly gone: boolean;
}

/** Retry inputs for {@link afterAttempt}. */
export interface RetryPolicy {
  /** Delays before each retry of this trigger (the first attempt is immediate). */
  readonly scheduleMs: readonly number[];
  readonly jitter: number;
  readonly maxRetryAfterMs: number;
  /** Uniform random number in [0, 1): injected so tests are deterministic. */
  readonly random: () => number;
}

/** What to record after an attempt: retry after `delayMs`, or the final outcome. */
export type AttemptOutcome =
  | { readonly kind: "delivered" }
  | { readonly kind: "retry"; readonly delayMs: number }
  | { readonly kind: "failed"; readonly reason: CallbackFailReason };

/** `ms` moved by up to ±jitter (a fraction), never below zero. */
export function jittered(ms: number, jitter: number, random: () => number): number {
  return Math.max(0, Math.round(ms * (1 + (2 * random() - 1) * jitter)));
}

/**
 * Classifies an attempt. Only 2xx delivers; 410 stops at once; a destination refused by the
 * egress policy (DNS now points somewhere internal) is not retried. Otherwise the next scheduled
 * delay applies, stretched to the receiver's Retry-After up to `maxRetryAfterMs`.
 * `retriesDone` counts the retries this trigger already made (attempt 1 → 0).
 */
export function afterAttempt(
  result: AttemptResult,
  retriesDone: number,
  policy: RetryPolicy,
): AttemptOutcome {
  if (result.ok) return { kind: "delivered" };
  if (result.gone) return { kind: "failed", reason: "gone" };
  if (result.errorClass === "ssrf_blocked") return { kind: "failed", reason: "refused" };
  const scheduled = policy.scheduleMs[retriesDone];
  if (scheduled === undefined) return { kind: "failed", reason: "exhausted" };
  let delayMs = jittered(scheduled, policy.jitter, policy.random);
  if (result.retryAfterSec !== undefined) {
    delayMs = Math.max(delayMs, Math.min(result.retryAfterSec * 1000, policy.maxRetryAfterMs));
  }
  return { kind: "retry", delayMs };
}

/** The `.cb` event that records an attempt and its outcome. */
export type AttemptRecord =
  | { readonly type: "callback.delivered"; readonly data: EventData<"callback.delivered"> }
  | { readonly type: "callback.attempted"; readonly data: EventData<"callback.attempted"> }
  | { readonly type: "callback.failed"; readonly data: EventData<"callback.failed"> };

/**
 * The one event an attempt is recorded as: a delivery is `callback.delivered` and a final failure
 * `callback.failed`, each carrying the attempt's status and duration; only an attempt followed
 * by a retry is `callback.attempted` (with next_attempt_at, the durable schedule).
 */
export function recordAttempt(input: {
  readonly attempt: number;
  readonly result: AttemptResult;
  readonly outcome: AttemptOutcome;
  readonly trigger: DeliveryTrigger;
  readonly nowMs: number;
}): AttemptRecord {
  const { attempt, result, outcome } = input;
  const details = {
    duration_ms: result.durationMs,
    ...(result.status === undefined ? {} : { status_code: result.status }),
    ...(result.errorClass === undefined ? {} : { error_class: result.errorClass }),
    ...(input.trigger.kind === "redelivery" ? { redelivery_seq: input.trigger.seq } : {}),
  };
  switch (outcome.kind) {
    case "delivered":
      return { type: "callback.delivered", data: { attempts: attempt, ...details } };
    case "failed":
      return {
        type: "callback.failed",
        data: { attempts: attempt, reason: outcome.reason, ...details },
      };
    case "retry":
      return {
        type: "callback.attempted",
        data: {
          attempt,
          ...details,
          next_attempt_at: new Date(input.nowMs + outcome.delayMs).toISOString(),
        },
      };
    default: {
      const unreachable: never = outcome;
      return unreachable;
    }
  }
}
