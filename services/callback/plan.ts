import type { StoredEvent } from "../../shared/bus/index.ts";
import type { DeliveryAttempt } from "../../shared/net/index.ts";

/**
 * What drives one delivery: the job's final status event (the original delivery) or an operator's
 * callback.redelivery_requested event at stream sequence `seq`. Each has its own attempts in the
 * `.cb` log, told apart by `redelivery_seq`, so two drivers never continue each other's retries.
 */
export type DeliveryTrigger =
  | { readonly kind: "original" }
  | { readonly kind: "redelivery"; readonly seq: number; readonly baseAttempts: number };

/** The next step, decided from the last `.cb` event alone (the log is the durable schedule). */
export type Step =
  | { readonly kind: "settled"; readonly why: "delivered_or_failed" | "superseded" }
  | {
      readonly kind: "finish";
      readonly outcome: "delivered" | "failed";
      readonly reason?: "exhausted" | "gone" | "refused";
      readonly attempts: number;
    }
  | { readonly kind: "wait"; readonly delayMs: number }
  | { readonly kind: "attempt"; readonly attempt: number };

/** A message woken less than this before its due time is attempted rather than parked again. */
const EARLY_SLACK_MS = 1_000;

function belongs(trigger: DeliveryTrigger, redeliverySeq: number | undefined): boolean {
  return trigger.kind === "original" ? redeliverySeq === undefined : redeliverySeq === trigger.seq;
}

/**
 * Decides what a delivery of the trigger message should do now. Pure. A crash between two
 * appends is completed here: an attempt recorded with a 2xx and no outcome yet becomes
 * callback.delivered without sending again; one recorded without a next attempt becomes
 * callback.failed. A message woken early (NATS restarted and redelivered it after ack_wait)
 * is parked again until the recorded next_attempt_at.
 */
export function nextStep(trigger: DeliveryTrigger, last: StoredEvent | null, nowMs: number): Step {
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
    case "callback.attempted": {
      const data = event.data;
      if (!belongs(trigger, data.redelivery_seq)) return { kind: "settled", why: "superseded" };
      const answered2xx =
        data.status_code !== undefined && data.status_code >= 200 && data.status_code < 300;
      if (answered2xx && data.error_class === undefined) {
        return { kind: "finish", outcome: "delivered", attempts: data.attempt };
      }
      if (data.next_attempt_at === undefined) {
        const reason =
          data.status_code === 410
            ? "gone"
            : data.error_class === "ssrf_blocked"
              ? "refused"
              : "exhausted";
        return { kind: "finish", outcome: "failed", reason, attempts: data.attempt };
      }
      const dueIn = Date.parse(data.next_attempt_at) - nowMs;
      if (dueIn > EARLY_SLACK_MS) return { kind: "wait", delayMs: dueIn };
      return { kind: "attempt", attempt: data.attempt + 1 };
    }
    default:
      // Other event types never land on `.cb`; treat them as nothing to do rather than loop.
      return { kind: "settled", why: "superseded" };
  }
}

/** Retry inputs for {@link afterAttempt}. */
export interface RetryPolicy {
  /** Delays before each retry of this trigger (the first attempt is immediate). */
  readonly scheduleMs: readonly number[];
  readonly jitter: number;
  readonly maxRetryAfterMs: number;
  /** Uniform random number in [0, 1): injected so tests are deterministic. */
  readonly random: () => number;
  /** False when JetStream will not deliver this message again (max_deliver reached). */
  readonly canRedeliver: boolean;
}

/** What to record after an attempt: retry after `delayMs`, or the final outcome. */
export type AttemptOutcome =
  | { readonly kind: "delivered" }
  | { readonly kind: "retry"; readonly delayMs: number }
  | { readonly kind: "failed"; readonly reason: "exhausted" | "gone" | "refused" };

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
  result: DeliveryAttempt,
  retriesDone: number,
  policy: RetryPolicy,
): AttemptOutcome {
  if (result.ok) return { kind: "delivered" };
  if (result.gone) return { kind: "failed", reason: "gone" };
  if (result.errorClass === "ssrf_blocked") return { kind: "failed", reason: "refused" };
  const scheduled = policy.scheduleMs[retriesDone];
  if (scheduled === undefined || !policy.canRedeliver)
    return { kind: "failed", reason: "exhausted" };
  let delayMs = jittered(scheduled, policy.jitter, policy.random);
  if (result.retryAfterSec !== undefined) {
    delayMs = Math.max(delayMs, Math.min(result.retryAfterSec * 1000, policy.maxRetryAfterMs));
  }
  return { kind: "retry", delayMs };
}
