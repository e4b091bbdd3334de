import { EARLY_SLACK_MS } from "../../../../shared/domain/index.ts";
import type { CurrentStatus } from "../../../../shared/jobs/index.ts";

/** Where an HTTP job stands, read from its last status event. */
export type HttpStanding =
  | { readonly kind: "attempt"; readonly attempt: number }
  | { readonly kind: "wait"; readonly delayMs: number; readonly attempt: number }
  /** Final, running, or accepted with 202: nothing for the dispatcher to send. */
  | { readonly kind: "handed_over" };

/**
 * Pure: the next step of an HTTP job from its `.job` log. Nothing recorded yet → attempt 1 (a
 * crash mid-POST therefore sends attempt 1 again, with the same webhook-id); a failed attempt n →
 * attempt n + 1 at its recorded next_attempt_at; anything else means the job is no longer the
 * dispatcher's to send.
 */
export function httpStanding(current: CurrentStatus, nowMs: number): HttpStanding {
  if (current.status === "queued") return { kind: "attempt", attempt: 1 };
  const last = current.last?.event;
  if (current.status !== "dispatched" || last?.type !== "job.attempt_failed") {
    return { kind: "handed_over" };
  }
  const attempt = last.data.attempt + 1;
  const dueIn =
    last.data.next_attempt_at === undefined ? 0 : Date.parse(last.data.next_attempt_at) - nowMs;
  return dueIn > EARLY_SLACK_MS
    ? { kind: "wait", delayMs: dueIn, attempt }
    : { kind: "attempt", attempt };
}
